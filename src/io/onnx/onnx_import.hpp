// onnx_import.hpp — what the ONNX importer's files share (onnx_import.cpp reads and walks the model,
// onnx_fold.cpp folds constants, onnx_import_ops.cpp maps operators to layers): constant tensors, the
// importer's state, and the per-node entry points.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cortado/cortado.pb.h"
#include "cortado/onnx.hpp"

namespace cortado {
namespace onnx_import {

// A tensor whose value the importer knows: an initializer, a Constant node's value, or a folded result.
// Float tensors keep their floats (weights stay byte-identical), integer tensors their int64 values.
struct Constant {
  std::vector<int64_t> dims;
  bool integer = false;
  std::vector<float> f;    // !integer
  std::vector<int64_t> i;  // integer
  int64_t count() const { return integer ? int64_t(i.size()) : int64_t(f.size()); }
  double at(int64_t k) const { return integer ? double(i[size_t(k)]) : double(f[size_t(k)]); }
  std::vector<float> floats() const;   // the values as floats
  std::vector<int64_t> ints() const;   // the values as int64 (floats must be whole)
};

Constant FromTensor(const onnx::TensorProto& tensor, const std::string& what);
// An Error naming `what` unless the constant's values fill its shape exactly.
void CheckFilled(const Constant& c, const std::string& what);

// Thrown (and caught per node) when a node cannot become a layer; the message says why.
struct Refusal {
  std::string why;
};

struct Importer {
  std::string source;
  OnnxImportOptions options;
  int64_t opset = 0;
  bool from_cortado = false;                       // producer_name "Cortado"
  int64_t fold_budget = 0;                         // values folding may still create (a hostile model's
                                                   // ConstantOfShape or Expand cannot take all memory)
  std::map<std::string, Constant> constants;       // by tensor name
  std::map<std::string, std::vector<int64_t>> shapes;  // inferred static shapes (-1: unknown dim)
  std::map<std::string, std::string> alias;        // tensor -> the blob that holds it (Identity, Dropout)
  std::map<std::string, std::vector<const onnx::NodeProto*>> consumers;  // tensor -> nodes reading it
  std::map<std::string, const onnx::NodeProto*> producer;                // tensor -> node writing it
  std::set<std::string> graph_outputs;
  std::set<const onnx::NodeProto*> absorbed;       // nodes another node's layer already covers
  std::map<std::string, std::vector<int64_t>> pad_into_window;  // Pad output -> its spatial pads (begin.., end..), for the Conv or AveragePool reading it
  std::set<std::string> layer_names;
  NetParameter net, weights;

  bool IsConstant(const std::string& name) const { return constants.count(name) > 0; }
  const Constant& Const(const std::string& name) const { return constants.at(name); }
  std::string Blob(const std::string& tensor) const;       // follows aliases
  std::vector<int64_t> Shape(const std::string& tensor) const;  // {} when unknown
  bool KnownShape(const std::string& tensor) const;
  int64_t Rank(const std::string& tensor) const { return int64_t(Shape(tensor).size()); }
  // A new layer in both NetParameters (named after the node, unique); blobs go to the weights copy.
  LayerParameter* AddLayer(const onnx::NodeProto& node, const std::string& type, const std::string& suffix = "");
  std::string NodeName(const onnx::NodeProto& node) const;
};

// Tries to fold `node` into constants (all inputs known, or Shape of a known shape). True when its
// outputs are now constants and it needs no layer.
bool FoldNode(Importer& im, const onnx::NodeProto& node);

// Maps `node` to layers, or throws Refusal.
void MapNode(Importer& im, const onnx::NodeProto& node);

// A blob of `layer` (the weights file gets it; the prototxt's copy of the layer drops it).
void AddBlob(LayerParameter* layer, const std::vector<int64_t>& dims, const std::vector<float>& data);

// "[1,3,224,224]", for messages.
std::string ShapeText(const std::vector<int64_t>& dims);

// v as an int64, or a Refusal when it is NaN or outside int64's range (a cast would be undefined).
int64_t ToInt64(double v);

// An axis attribute or input in [0, rank).
int64_t NormalizeAxis(int64_t axis, int64_t rank);

}  // namespace onnx_import
}  // namespace cortado
