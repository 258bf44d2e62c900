// onnx_tensors.cpp — tensors and attributes shared by the ONNX exporter and importer (onnx_tensors.hpp).
#include "onnx_tensors.hpp"

#include <cmath>
#include <cstring>

#include <glog/logging.h>

#include "cortado/error.hpp"
#include "cortado/onnx.hpp"

namespace cortado {

bool BuiltWithOnnx() { return true; }

namespace onnx_tensors {
namespace {

template <typename T>
std::vector<T> RawValues(const onnx::TensorProto& tensor, const std::string& what) {
  const std::string& raw = tensor.raw_data();
  CORTADO_REQUIRE(raw.size() % sizeof(T) == 0, what, ": raw_data of ", raw.size(),
                  " bytes is not a whole number of ", sizeof(T), "-byte values");
  std::vector<T> values(raw.size() / sizeof(T));
  if (!values.empty()) std::memcpy(values.data(), raw.data(), raw.size());  // ONNX stores little-endian
  return values;
}

// IEEE half to float.
float HalfToFloat(uint16_t h) {
  const uint32_t sign = (h >> 15) & 1, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  float magnitude;
  if (exponent == 0) magnitude = std::ldexp(float(mantissa), -24);
  else if (exponent == 31) magnitude = mantissa ? NAN : INFINITY;
  else magnitude = std::ldexp(float(mantissa | 0x400), int(exponent) - 25);
  return sign ? -magnitude : magnitude;
}

template <typename Out>
std::vector<Out> Values(const onnx::TensorProto& tensor, const std::string& what) {
  CORTADO_REQUIRE(tensor.data_location() != onnx::TensorProto::EXTERNAL, what,
                  ": the tensor's data is in an external file, which import_onnx does not read (save the "
                  "model with its weights inside, e.g. onnx.save(model, path, save_as_external_data=False))");
  CORTADO_REQUIRE(ElementCount(tensor) >= 0, what, ": its dims are not a tensor's shape (negative, or more "
                  "values than memory holds)");
  const bool raw = tensor.has_raw_data();
  std::vector<Out> out;
  auto take = [&out](const auto& values) { out.assign(values.begin(), values.end()); };
  switch (tensor.data_type()) {
    case onnx::TensorProto::FLOAT:
      raw ? take(RawValues<float>(tensor, what)) : take(tensor.float_data());
      break;
    case onnx::TensorProto::DOUBLE:
      raw ? take(RawValues<double>(tensor, what)) : take(tensor.double_data());
      break;
    case onnx::TensorProto::INT64:
      raw ? take(RawValues<int64_t>(tensor, what)) : take(tensor.int64_data());
      break;
    case onnx::TensorProto::INT32:
      raw ? take(RawValues<int32_t>(tensor, what)) : take(tensor.int32_data());
      break;
    case onnx::TensorProto::FLOAT16: {
      std::vector<uint16_t> halves;
      if (raw) halves = RawValues<uint16_t>(tensor, what);
      else halves.assign(tensor.int32_data().begin(), tensor.int32_data().end());
      for (uint16_t h : halves) out.push_back(static_cast<Out>(HalfToFloat(h)));
      break;
    }
    default:
      Fail(what, ": tensors of ONNX data type ", onnx::TensorProto::DataType_Name(
               static_cast<onnx::TensorProto::DataType>(tensor.data_type())), " are not supported");
  }
  CORTADO_REQUIRE(int64_t(out.size()) == ElementCount(tensor), what, ": the tensor has ", out.size(),
                  " values but its shape holds ", ElementCount(tensor));
  return out;
}

}  // namespace

int64_t ElementCount(const onnx::TensorProto& tensor) {
  int64_t count = 1;
  for (int64_t d : tensor.dims()) {
    if (d < 0 || (d > 0 && count > (int64_t(1) << 62) / d)) return -1;  // not a tensor's shape
    count *= d;
  }
  return count;
}

void SetFloats(const std::string& name, const std::vector<int64_t>& dims, const float* values,
               onnx::TensorProto* tensor) {
  tensor->Clear();
  tensor->set_name(name);
  tensor->set_data_type(onnx::TensorProto::FLOAT);
  int64_t count = 1;
  for (int64_t d : dims) {
    tensor->add_dims(d);
    count *= d;
  }
  tensor->set_raw_data(reinterpret_cast<const char*>(values), size_t(count) * sizeof(float));
}

void SetInts(const std::string& name, const std::vector<int64_t>& dims, const std::vector<int64_t>& values,
             onnx::TensorProto* tensor) {
  tensor->Clear();
  tensor->set_name(name);
  tensor->set_data_type(onnx::TensorProto::INT64);
  if (dims.size() == 1 && dims[0] == -1) tensor->add_dims(int64_t(values.size()));
  else for (int64_t d : dims) tensor->add_dims(d);
  CHECK_EQ(ElementCount(*tensor), int64_t(values.size())) << name;
  tensor->set_raw_data(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(int64_t));
}

std::vector<float> Floats(const onnx::TensorProto& tensor, const std::string& what) {
  return Values<float>(tensor, what);
}

std::vector<int64_t> Ints(const onnx::TensorProto& tensor, const std::string& what) {
  if (tensor.data_type() == onnx::TensorProto::FLOAT || tensor.data_type() == onnx::TensorProto::DOUBLE) {
    std::vector<int64_t> out;
    for (double v : Values<double>(tensor, what)) {
      CORTADO_REQUIRE(v == std::floor(v) && v >= -9.2e18 && v <= 9.2e18, what,
                      ": expected whole numbers in int64's range, found ", v);
      out.push_back(int64_t(v));
    }
    return out;
  }
  return Values<int64_t>(tensor, what);
}

void AddInt(onnx::NodeProto* node, const std::string& name, int64_t value) {
  auto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}

void AddFloat(onnx::NodeProto* node, const std::string& name, float value) {
  auto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(value);
}

void AddInts(onnx::NodeProto* node, const std::string& name, const std::vector<int64_t>& values) {
  auto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
}

void AddString(onnx::NodeProto* node, const std::string& name, const std::string& value) {
  auto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(value);
}

const onnx::AttributeProto* FindAttribute(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

int64_t IntAttribute(const onnx::NodeProto& node, const std::string& name, int64_t fallback) {
  const auto* a = FindAttribute(node, name);
  return a ? a->i() : fallback;
}

float FloatAttribute(const onnx::NodeProto& node, const std::string& name, float fallback) {
  const auto* a = FindAttribute(node, name);
  return a ? a->f() : fallback;
}

std::vector<int64_t> IntsAttribute(const onnx::NodeProto& node, const std::string& name,
                                   const std::vector<int64_t>& fallback) {
  const auto* a = FindAttribute(node, name);
  return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : fallback;
}

std::string StringAttribute(const onnx::NodeProto& node, const std::string& name, const std::string& fallback) {
  const auto* a = FindAttribute(node, name);
  return a ? a->s() : fallback;
}

}  // namespace onnx_tensors
}  // namespace cortado
