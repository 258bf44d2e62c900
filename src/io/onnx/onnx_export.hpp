// onnx_export.hpp — what the ONNX exporter's two files share (private to src/io/onnx): the graph being
// written (unique value and node names, initializers, nodes), and one layer's view of it — the ONNX
// names and shapes of its bottoms, the names its tops must get, its parameter blobs — for the per-layer
// emitters of onnx_export_layers.cpp.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "cortado/cortado.pb.h"

namespace cortado {
namespace onnx_export {

// The graph under construction. Every value (node output, initializer, graph input) is named once.
class GraphWriter {
 public:
  GraphWriter(onnx::GraphProto* graph, bool dynamic_batch) : graph_(graph), dynamic_batch_(dynamic_batch) {}
  bool dynamic_batch() const { return dynamic_batch_; }
  onnx::GraphProto* graph() { return graph_; }

  // `base` if no value has that name yet, else base_2, base_3, ...; the name is then taken.
  std::string UniqueValue(const std::string& base);
  // Names kept for the blobs' final values: UniqueValue gives them only to ClaimBlobName.
  void ReserveBlobName(const std::string& name) { reserved_.insert(name); }
  // `name` when it is reserved and not yet claimed, else UniqueValue(name).
  std::string ClaimBlobName(const std::string& name);
  // Likewise for node names (a separate space: node "conv1" writes value "conv1").
  std::string UniqueNode(const std::string& base);

  // A node of `op` reading `inputs` and writing `outputs` (names already taken), named `name` (made unique).
  onnx::NodeProto* AddNode(const std::string& op, const std::vector<std::string>& inputs,
                           const std::vector<std::string>& outputs, const std::string& name);
  // Initializers; each returns the (unique) name, from `base`.
  std::string Floats(const std::string& base, const std::vector<int64_t>& dims, const std::vector<float>& values);
  std::string Scalar(const std::string& base, float value);  // a 0-D FLOAT tensor
  std::string Ints(const std::string& base, const std::vector<int64_t>& values);  // a 1-D INT64 tensor

 private:
  onnx::GraphProto* graph_;
  bool dynamic_batch_;
  std::set<std::string> values_, nodes_, reserved_;
};

// One layer as the emitters see it.
struct LayerIO {
  std::string name;   // the layer's name (node names start with it)
  std::string type;   // its type ("Convolution")
  const LayerParameter* param = nullptr;
  std::vector<std::string> in;               // ONNX names of the bottoms' current values
  std::vector<std::vector<int>> in_shapes;   // the bottoms' shapes (axis 0 the batch)
  std::vector<std::vector<int>> out_shapes;  // the tops' shapes
  std::vector<std::vector<float>> blobs;     // the parameter blobs' values (Caffe's layouts)
  std::vector<std::vector<int>> blob_shapes;
};

// Writes the nodes of one layer and returns the names of the values holding its tops (in order), or
// returns false with `why` saying why ONNX cannot express the layer. A returned name may be any value
// (a node output of this layer, which the caller renames to the top's final name, or an earlier value).
bool EmitLayer(GraphWriter& g, const LayerIO& io, std::vector<std::string>* tops, std::string* why);

// Why a layer of this type is never exported, or "" when EmitLayer knows the type.
std::string UnsupportedReason(const std::string& type);

}  // namespace onnx_export
}  // namespace cortado
