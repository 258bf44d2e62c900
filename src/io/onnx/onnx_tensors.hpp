// onnx_tensors.hpp — what the ONNX exporter and importer share: float and integer tensors to and from
// onnx::TensorProto (raw little-endian data, as exporters write it; the typed fields too on reading),
// and node attributes by name.
#pragma once

#include <onnx/onnx_pb.h>  // onnx::TensorProto, NodeProto, AttributeProto

#include <cstdint>
#include <string>
#include <vector>

namespace cortado {
namespace onnx_tensors {

// A FLOAT tensor named `name` of shape `dims` holding values (count = product of dims).
void SetFloats(const std::string& name, const std::vector<int64_t>& dims, const float* values,
               onnx::TensorProto* tensor);
// An INT64 tensor named `name` of shape `dims` (a 1-D tensor of values.size() when dims is {-1}).
void SetInts(const std::string& name, const std::vector<int64_t>& dims, const std::vector<int64_t>& values,
             onnx::TensorProto* tensor);

// The tensor's values as floats (FLOAT, DOUBLE, FLOAT16, INT32, INT64 tensors; raw_data or the typed
// field). `what` names the tensor in errors (the node and input). Throws Error for external data or
// another type.
std::vector<float> Floats(const onnx::TensorProto& tensor, const std::string& what);
// The tensor's values as int64 (INT64, INT32, and FLOAT/DOUBLE holding whole numbers).
std::vector<int64_t> Ints(const onnx::TensorProto& tensor, const std::string& what);
// The product of the tensor's dims; -1 when a dim is negative or the product passes 2^62.
int64_t ElementCount(const onnx::TensorProto& tensor);

// Attributes of a node being written.
void AddInt(onnx::NodeProto* node, const std::string& name, int64_t value);
void AddFloat(onnx::NodeProto* node, const std::string& name, float value);
void AddInts(onnx::NodeProto* node, const std::string& name, const std::vector<int64_t>& values);
void AddString(onnx::NodeProto* node, const std::string& name, const std::string& value);

// Attributes of a node being read; the default when absent.
const onnx::AttributeProto* FindAttribute(const onnx::NodeProto& node, const std::string& name);
int64_t IntAttribute(const onnx::NodeProto& node, const std::string& name, int64_t fallback);
float FloatAttribute(const onnx::NodeProto& node, const std::string& name, float fallback);
std::vector<int64_t> IntsAttribute(const onnx::NodeProto& node, const std::string& name,
                                   const std::vector<int64_t>& fallback = {});
std::string StringAttribute(const onnx::NodeProto& node, const std::string& name, const std::string& fallback);

}  // namespace onnx_tensors
}  // namespace cortado
