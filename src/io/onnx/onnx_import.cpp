// onnx_import.cpp — ONNX import (cortado/onnx.hpp): reads the ModelProto, checks it (opset, the ONNX
// checker), fixes the graph inputs' symbolic batch axis and runs ONNX shape inference, writes an Input
// layer per graph input, then walks the nodes in order, folding constants (onnx_fold.cpp) and mapping
// the rest to layers (onnx_import_ops.cpp). Every node that cannot be mapped is collected, and the
// import fails with one line naming them all; otherwise the net is built on a planning context, as
// trainer will build it, and the prototxt's NetParameter and the weights' NetParameter (the same
// layers with their blobs) are returned.
#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <cmath>
#include <sstream>

#include "cortado/context.hpp"  // Context::PlanOnly
#include "cortado/error.hpp"
#include "cortado/net.hpp"
#include "cortado/onnx.hpp"
#include "onnx_import.hpp"
#include "onnx_tensors.hpp"

namespace cortado {
namespace onnx_import {

std::vector<float> Constant::floats() const {
  if (!integer) return f;
  return std::vector<float>(i.begin(), i.end());
}

std::vector<int64_t> Constant::ints() const {
  if (integer) return i;
  std::vector<int64_t> out;
  for (float v : f) {
    if (v != std::floor(v)) throw Refusal{"expected whole numbers in a constant, found " + std::to_string(v)};
    out.push_back(ToInt64(v));
  }
  return out;
}

std::string ShapeText(const std::vector<int64_t>& dims) {
  std::string text = "[";
  for (size_t k = 0; k < dims.size(); ++k) text += (k ? "," : "") + std::to_string(dims[k]);
  return text + "]";
}

namespace {

// What ONNX 1.12's checker and shape inference do not handle themselves, refused first in every graph
// of the model, subgraphs too: an experimental operator (the checker prints a warning of its own and
// passes it) and a window's zero or negative attributes (shape inference divides by a stride).
void CheckBeforeOnnx(const onnx::GraphProto& graph, int64_t opset, const std::string& source) {
  for (const auto& node : graph.node()) {
    if (node.domain().empty() || node.domain() == "ai.onnx") {
      const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(node.op_type(), int(opset), "");
      CORTADO_REQUIRE(schema && schema->support_level() != onnx::OpSchema::SupportType::EXPERIMENTAL, source,
                      ": node '", node.name(), "' (", node.op_type(), "): ONNX has no operator ", node.op_type(),
                      " at opset ", opset, " (or only an experimental one, which import_onnx does not read)");
    }
    for (const auto& a : node.attribute()) {
      if (a.name() == "strides" || a.name() == "dilations" || a.name() == "kernel_shape")
        for (int64_t v : a.ints())
          CORTADO_REQUIRE(v > 0, source, ": node '", node.name(), "' (", node.op_type(), "): its ", a.name(),
                          " must be positive, got ", v);
      if (a.name() == "group" && a.type() == onnx::AttributeProto::INT)
        CORTADO_REQUIRE(a.i() > 0, source, ": node '", node.name(), "' (", node.op_type(),
                        "): its group must be positive, got ", a.i());
      if (a.has_g()) CheckBeforeOnnx(a.g(), opset, source);
      for (const auto& g : a.graphs()) CheckBeforeOnnx(g, opset, source);
    }
  }
}

}  // namespace

Constant FromTensor(const onnx::TensorProto& tensor, const std::string& what) {
  Constant c;
  c.dims.assign(tensor.dims().begin(), tensor.dims().end());
  switch (tensor.data_type()) {
    case onnx::TensorProto::FLOAT:
    case onnx::TensorProto::DOUBLE:
    case onnx::TensorProto::FLOAT16:
      c.f = onnx_tensors::Floats(tensor, what);
      break;
    case onnx::TensorProto::BOOL:
    case onnx::TensorProto::INT8:
    case onnx::TensorProto::UINT8: {
      c.integer = true;
      if (tensor.has_raw_data()) {
        for (char b : tensor.raw_data())
          c.i.push_back(tensor.data_type() == onnx::TensorProto::INT8 ? int64_t(int8_t(b)) : int64_t(uint8_t(b)));
      } else {
        c.i.assign(tensor.int32_data().begin(), tensor.int32_data().end());
      }
      break;
    }
    default:
      c.integer = true;
      c.i = onnx_tensors::Ints(tensor, what);
  }
  CheckFilled(c, what);
  return c;
}

void CheckFilled(const Constant& c, const std::string& what) {
  int64_t count = 1;
  for (int64_t d : c.dims) {
    CORTADO_REQUIRE(d >= 0 && (d == 0 || count <= (int64_t(1) << 40) / d), what, ": its shape ",
                    ShapeText(c.dims), " is not a tensor's shape");
    count *= d;
  }
  CORTADO_REQUIRE(count == c.count(), what, ": it holds ", c.count(), " values but its shape ",
                  ShapeText(c.dims), " holds ", count);
}

int64_t ToInt64(double v) {
  if (!(v >= -9.2e18 && v <= 9.2e18)) throw Refusal{"the constant value " + std::to_string(v) + " is outside int64's range"};
  return int64_t(v);
}

int64_t NormalizeAxis(int64_t axis, int64_t rank) {
  const int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    throw Refusal{"axis " + std::to_string(axis) + " is outside a tensor of rank " + std::to_string(rank)};
  return a;
}

std::string Importer::Blob(const std::string& tensor) const {
  std::string name = tensor;
  for (auto it = alias.find(name); it != alias.end(); it = alias.find(name)) name = it->second;
  return name;
}

std::vector<int64_t> Importer::Shape(const std::string& tensor) const {
  auto c = constants.find(tensor);
  if (c != constants.end()) return c->second.dims;
  auto s = shapes.find(tensor);
  return s == shapes.end() ? std::vector<int64_t>() : s->second;
}

bool Importer::KnownShape(const std::string& tensor) const {
  if (constants.count(tensor)) return true;
  auto s = shapes.find(tensor);
  if (s == shapes.end()) return false;
  for (int64_t d : s->second)
    if (d < 0) return false;
  return true;
}

std::string Importer::NodeName(const onnx::NodeProto& node) const {
  return node.name().empty() ? node.op_type() : node.name();
}

LayerParameter* Importer::AddLayer(const onnx::NodeProto& node, const std::string& type, const std::string& suffix) {
  std::string base = NodeName(node) + suffix;
  std::string name = base;
  for (int k = 2; layer_names.count(name); ++k) name = base + "_" + std::to_string(k);
  layer_names.insert(name);
  LayerParameter* layer = net.add_layer();
  layer->set_name(name);
  layer->set_type(type);
  return layer;
}

void AddBlob(LayerParameter* layer, const std::vector<int64_t>& dims, const std::vector<float>& data) {
  BlobProto* blob = layer->add_blobs();
  for (int64_t d : dims) blob->mutable_shape()->add_dim(d);
  blob->mutable_data()->Reserve(int(data.size()));
  for (float v : data) blob->add_data(v);
}

namespace {

std::string FirstLine(const std::string& text) {
  const size_t end = text.find('\n');
  return end == std::string::npos ? text : text.substr(0, end);
}

std::vector<int64_t> DimsOf(const onnx::TypeProto& type) {
  std::vector<int64_t> dims;
  if (!type.has_tensor_type() || !type.tensor_type().has_shape()) return dims;
  for (const auto& d : type.tensor_type().shape().dim()) dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
  return dims;
}

// Axis 0 of each graph input, when symbolic, becomes the batch size; any other symbolic axis fails.
// Writes the Input layers.
void FixInputs(Importer& im, onnx::GraphProto* graph, const std::set<std::string>& initializers) {
  for (auto& input : *graph->mutable_input()) {
    if (initializers.count(input.name())) continue;
    CORTADO_REQUIRE(input.type().has_tensor_type() && input.type().tensor_type().has_shape(), im.source,
                    ": graph input '", input.name(), "' has no tensor shape");
    auto* shape = input.mutable_type()->mutable_tensor_type()->mutable_shape();
    LayerParameter* layer = im.net.add_layer();
    layer->set_name(input.name());
    layer->set_type("Input");
    layer->add_top(input.name());
    im.layer_names.insert(input.name());
    BlobShape* blob_shape = layer->mutable_input_param()->add_shape();
    for (int axis = 0; axis < shape->dim_size(); ++axis) {
      auto* dim = shape->mutable_dim(axis);
      if (!dim->has_dim_value() || dim->dim_value() <= 0) {
        CORTADO_REQUIRE(axis == 0, im.source, ": graph input '", input.name(), "' has a symbolic axis ", axis,
                        dim->has_dim_param() ? " ('" + dim->dim_param() + "')" : std::string(),
                        "; only axis 0 (the batch) may be symbolic");
        dim->clear_dim_param();
        dim->set_dim_value(im.options.batch_size);
      }
      blob_shape->add_dim(dim->dim_value());
    }
  }
}

void CollectShapes(Importer& im, const onnx::GraphProto& graph) {
  for (const auto& v : graph.input()) im.shapes[v.name()] = DimsOf(v.type());
  for (const auto& v : graph.value_info()) im.shapes[v.name()] = DimsOf(v.type());
  for (const auto& v : graph.output())
    if (!im.shapes.count(v.name()) || im.shapes[v.name()].empty()) im.shapes[v.name()] = DimsOf(v.type());
}

// The model for shape inference: the graph inputs (their batch axis fixed), the folded constants as
// initializers (large float ones as typed inputs without data, which is all inference needs of them),
// and the nodes not yet folded.
onnx::ModelProto SlimModel(const onnx::ModelProto& model, const Importer& im,
                           const std::set<std::string>& initializers,
                           const std::set<const onnx::NodeProto*>& folded) {
  onnx::ModelProto slim;
  slim.set_ir_version(model.ir_version());
  *slim.mutable_opset_import() = model.opset_import();
  *slim.mutable_functions() = model.functions();
  onnx::GraphProto* g = slim.mutable_graph();
  g->set_name(model.graph().name());
  for (const auto& input : model.graph().input())
    if (!initializers.count(input.name())) *g->add_input() = input;
  *g->mutable_output() = model.graph().output();
  for (const auto& node : model.graph().node())
    if (!folded.count(&node)) *g->add_node() = node;
  for (const auto& [name, c] : im.constants) {
    CheckFilled(c, im.source + ": tensor '" + name + "'");
    if (c.integer) {
      onnx_tensors::SetInts(name, c.dims, c.i, g->add_initializer());
    } else if (c.f.size() <= 4096) {
      onnx_tensors::SetFloats(name, c.dims, c.f.data(), g->add_initializer());
    } else {
      auto* input = g->add_input();
      input->set_name(name);
      auto* type = input->mutable_type()->mutable_tensor_type();
      type->set_elem_type(onnx::TensorProto::FLOAT);
      auto* shape = type->mutable_shape();
      for (int64_t d : c.dims) shape->add_dim()->set_dim_value(d);
    }
  }
  return slim;
}

}  // namespace
}  // namespace onnx_import

ImportedNet ImportOnnxModel(const std::string& model_bytes, const OnnxImportOptions& options,
                            const std::string& source) {
  using namespace onnx_import;
  CORTADO_REQUIRE(options.batch_size >= 1, source, ": the batch size must be at least 1, got ", options.batch_size);
  onnx::ModelProto model;
  CORTADO_REQUIRE(model.ParseFromString(model_bytes), source,
                  ": not an ONNX model (the bytes do not parse as an onnx.ModelProto)");
  CORTADO_REQUIRE(model.has_graph() && model.graph().node_size() > 0, source,
                  ": not an ONNX model (it has no graph nodes)");
  Importer im;
  im.source = source;
  im.options = options;
  bool has_default = false;
  for (const auto& opset : model.opset_import())
    if (opset.domain().empty() || opset.domain() == "ai.onnx") {
      im.opset = opset.version();
      has_default = true;
    }
  CORTADO_REQUIRE(has_default, source, ": the model imports no opset of the default ONNX domain");
  CORTADO_REQUIRE(im.opset >= 9, source, ": the model uses opset ", im.opset,
                  " of the default domain; import_onnx reads opset 9 and newer (re-export it with a newer "
                  "opset, e.g. torch.onnx.export(..., opset_version=13))");
  // The initializers first (Cortado's own reading, which checks each tensor's values against its shape).
  onnx::GraphProto* graph = model.mutable_graph();
  std::set<std::string> initializers;
  im.fold_budget = int64_t(1) << 25;
  for (const auto& t : graph->initializer()) {
    initializers.insert(t.name());
    im.constants[t.name()] = FromTensor(t, source + ": initializer '" + t.name() + "'");
    im.fold_budget += 2 * im.constants[t.name()].count();
  }
  CheckBeforeOnnx(model.graph(), im.opset, source);
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    Fail(source, ": not a valid ONNX model: ", FirstLine(e.what()));
  }
  im.from_cortado = model.producer_name() == "Cortado";

  FixInputs(im, graph, initializers);
  graph->clear_value_info();
  for (const auto& out : model.graph().output()) im.graph_outputs.insert(out.name());
  for (const auto& node : model.graph().node()) {
    for (const auto& in : node.input())
      if (!in.empty()) im.consumers[in].push_back(&node);
    for (const auto& out : node.output())
      if (!out.empty()) im.producer[out] = &node;
  }
  // Shape inference and folding in turns: a folded shape lets inference see through a Reshape, whose
  // output shape lets the next Shape fold.
  std::set<const onnx::NodeProto*> folded;
  for (int round = 0; round < 16; ++round) {
    onnx::ModelProto slim = SlimModel(model, im, initializers, folded);
    try {
      onnx::shape_inference::InferShapes(slim);
    } catch (const std::exception& e) {
      Fail(source, ": ONNX shape inference failed: ", FirstLine(e.what()));
    }
    im.shapes.clear();
    CollectShapes(im, slim.graph());
    bool progress = false;
    for (const auto& node : model.graph().node()) {
      if (folded.count(&node) || !(node.domain().empty() || node.domain() == "ai.onnx")) continue;
      try {
        if (FoldNode(im, node)) {
          folded.insert(&node);
          progress = true;
        }
      } catch (const Refusal&) {  // reported when the node is mapped
      } catch (const Error&) {
      }
    }
    if (!progress) break;
  }

  std::vector<std::string> refusals;
  int index = 0;
  for (auto& node : *graph->mutable_node()) {
    if (node.name().empty()) node.set_name(node.op_type() + "_" + std::to_string(index));
    ++index;
  }
  for (const auto& node : model.graph().node()) {
    if (im.absorbed.count(&node) || folded.count(&node)) continue;
    try {
      if (!node.domain().empty() && node.domain() != "ai.onnx")
        throw Refusal{"operators of domain '" + node.domain() + "' are not ONNX's own"};
      if (FoldNode(im, node)) continue;
      MapNode(im, node);
    } catch (const Refusal& r) {
      refusals.push_back("node '" + node.name() + "' (" + node.op_type() + "): " + r.why);
    } catch (const Error& e) {
      refusals.push_back("node '" + node.name() + "' (" + node.op_type() + "): " + e.what());
    }
  }
  // A graph output that is another tensor's alias (Identity, Dropout) gets a layer of its own that
  // copies (Power with its defaults is y = x exactly), so that the net's outputs keep their names.
  for (const auto& out : model.graph().output()) {
    if (im.IsConstant(out.name())) {
      refusals.push_back("graph output '" + out.name() + "' is a constant, which no Cortado layer computes");
      continue;
    }
    const std::string blob = im.Blob(out.name());
    if (blob == out.name()) continue;
    std::string name = out.name() + "_copy";
    for (int k = 2; im.layer_names.count(name); ++k) name = out.name() + "_copy_" + std::to_string(k);
    im.layer_names.insert(name);
    LayerParameter* copy = im.net.add_layer();
    copy->set_name(name);
    copy->set_type("Power");
    copy->add_bottom(blob);
    copy->add_top(out.name());
  }
  if (!refusals.empty()) {
    std::ostringstream message;
    for (size_t k = 0; k < refusals.size(); ++k) message << (k ? "; " : "") << refusals[k];
    Fail(source, ": ", refusals.size(), " node(s) have no Cortado layer: ", message.str());
  }

  ImportedNet out;
  im.net.set_name(model.graph().name().empty() ? "onnx_model" : model.graph().name());
  out.weights = im.net;
  out.net = std::move(im.net);
  for (auto& layer : *out.net.mutable_layer()) layer.clear_blobs();
  // The net builds as trainer will build it: every layer set up and shaped, on a planning context
  // (nothing allocated). A layer that refuses its shapes is an Error naming it.
  Context planning(Device::kCPU, Context::PlanOnly{});
  Net built(out.net, planning, source);
  return out;
}

}  // namespace cortado
