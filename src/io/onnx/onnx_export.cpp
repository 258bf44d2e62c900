// onnx_export.cpp — ExportOnnxModel (cortado/onnx.hpp): a net and its weights as an ONNX model (opset 13).
//
// 1. The deploy form of the net: the TEST phase's layers, without data, loss, Accuracy and Silence
//    layers; each data layer's top that a kept layer reads becomes an Input top, shaped as the options
//    say or as the data layer, built on its own, makes it (it reads one record).
// 2. A CPU Net of that, with the weights file's blobs (or the fillers'), gives every blob's shape and
//    every layer's parameters.
// 3. The layers in order become nodes (onnx_export_layers.cpp). Caffe's in-place tops become single
//    assignments: the last layer writing a blob writes the blob's own name, earlier writers
//    "<blob>/<layer>"; a Split's tops are its bottom's value. Layers ONNX cannot express are collected
//    and refused together in one Error.
// 4. The model passes ONNX's checker and strict shape inference (a failure is a CHECK: our bug).
#include "onnx_export.hpp"

#include <glog/logging.h>
#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include <map>
#include <sstream>
#include <utility>

#include "cortado/context.hpp"
#include "cortado/cpu_engine.hpp"  // CpuEngineSetting, SetCpuEngine
#include "cortado/error.hpp"
#include "cortado/layer.hpp"
#include "cortado/net.hpp"
#include "cortado/onnx.hpp"
#include "../../core/net_rules.hpp"  // UpgradeNetInputs
#include "onnx_tensors.hpp"

namespace cortado {
namespace onnx_export {

std::string GraphWriter::UniqueValue(const std::string& base) {
  std::string name = base;
  for (int k = 2; values_.count(name) || reserved_.count(name); ++k) name = base + "_" + std::to_string(k);
  values_.insert(name);
  return name;
}

std::string GraphWriter::ClaimBlobName(const std::string& name) {
  if (!reserved_.count(name) || values_.count(name)) return UniqueValue(name);
  values_.insert(name);
  return name;
}

std::string GraphWriter::UniqueNode(const std::string& base) {
  std::string name = base;
  for (int k = 2; nodes_.count(name); ++k) name = base + "_" + std::to_string(k);
  nodes_.insert(name);
  return name;
}

onnx::NodeProto* GraphWriter::AddNode(const std::string& op, const std::vector<std::string>& inputs,
                                      const std::vector<std::string>& outputs, const std::string& name) {
  onnx::NodeProto* node = graph_->add_node();
  node->set_op_type(op);
  node->set_name(UniqueNode(name));
  for (const std::string& in : inputs) node->add_input(in);
  for (const std::string& out : outputs) node->add_output(out);
  return node;
}

std::string GraphWriter::Floats(const std::string& base, const std::vector<int64_t>& dims,
                                const std::vector<float>& values) {
  int64_t count = 1;
  for (int64_t d : dims) count *= d;
  CHECK_EQ(count, int64_t(values.size())) << base;
  const std::string name = UniqueValue(base);
  onnx_tensors::SetFloats(name, dims, values.data(), graph_->add_initializer());
  return name;
}

std::string GraphWriter::Scalar(const std::string& base, float value) { return Floats(base, {}, {value}); }

std::string GraphWriter::Ints(const std::string& base, const std::vector<int64_t>& values) {
  const std::string name = UniqueValue(base);
  onnx_tensors::SetInts(name, {-1}, values, graph_->add_initializer());
  return name;
}

namespace {

bool IsDataLayer(const std::string& type) {
  static const std::set<std::string> kTypes = {"Data", "ImageData", "HDF5Data", "MemoryData", "DummyData",
                                               "WindowData"};
  return kTypes.count(type) > 0;
}

bool IsDroppedLayer(const std::string& type) {
  static const std::set<std::string> kTypes = {
      "SoftmaxWithLoss", "EuclideanLoss", "SigmoidCrossEntropyLoss", "HingeLoss", "InfogainLoss",
      "MultinomialLogisticLoss", "ContrastiveLoss", "Accuracy", "Silence"};
  return kTypes.count(type) > 0;
}

std::string ShapeText(const std::vector<int>& shape) {
  std::ostringstream out;
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? "," : "") << shape[i];
  return out.str();
}

// The top shapes of a data layer, learned by building it alone in the TEST phase.
std::vector<std::vector<int>> LearnDataShapes(const LayerParameter& layer, const std::string& source) {
  NetParameter alone;
  alone.set_name("shape of " + layer.name());
  alone.mutable_state()->set_phase(TEST);
  *alone.add_layer() = layer;
  std::vector<std::vector<int>> shapes;
  Context ctx(Device::kCPU, 1);
  Net net(alone, ctx, source);
  for (const Blob* top : net.top_vecs().at(0)) shapes.push_back(top->shape());
  return shapes;
}

// The deploy form of `param` (see the file comment, step 1).
NetParameter DeployNet(const NetParameter& param, const OnnxExportOptions& options, const std::string& source) {
  NetParameter test = param;
  UpgradeNetInputs(&test);  // net-level inputs as an Input layer, whose shapes --input_shape may replace
  test.mutable_state()->set_phase(TEST);
  test = Net::FilterByState(test);

  std::map<std::string, std::vector<int>> given(options.input_shapes.begin(), options.input_shapes.end());
  std::set<std::string> used_given;
  // Bottoms read by the layers that stay.
  std::set<std::string> read;
  for (const LayerParameter& layer : test.layer())
    if (!IsDataLayer(layer.type()) && !IsDroppedLayer(layer.type()))
      for (const std::string& bottom : layer.bottom()) read.insert(bottom);

  NetParameter deploy = test;
  deploy.clear_layer();
  deploy.clear_force_backward();  // a forward-only net: no layer runs out of place for a backward pass
  for (const LayerParameter& layer : test.layer()) {
    if (IsDroppedLayer(layer.type())) continue;
    if (layer.type() == "Input") {
      LayerParameter input = layer;
      for (int t = 0; t < input.top_size(); ++t) {
        auto it = given.find(input.top(t));
        if (it == given.end()) continue;
        used_given.insert(it->first);
        if (input.input_param().shape_size() == 0) break;  // no shapes to override
        BlobShape* shape = input.mutable_input_param()->mutable_shape(
            input.input_param().shape_size() == 1 ? 0 : std::min(t, input.input_param().shape_size() - 1));
        shape->clear_dim();
        for (int d : it->second) shape->add_dim(d);
      }
      *deploy.add_layer() = input;
      continue;
    }
    if (!IsDataLayer(layer.type())) {
      *deploy.add_layer() = layer;
      continue;
    }
    std::vector<int> kept;
    for (int t = 0; t < layer.top_size(); ++t)
      if (read.count(layer.top(t))) kept.push_back(t);
    if (kept.empty()) continue;
    std::vector<std::vector<int>> learned;
    bool all_given = true;
    for (int t : kept) all_given = all_given && given.count(layer.top(t));
    if (!all_given) {
      std::string reason;
      try {
        learned = LearnDataShapes(layer, source);
      } catch (const Error& error) {
        reason = error.what();
      }
      for (int t : kept) {
        if (given.count(layer.top(t))) continue;
        if (reason.empty() && t >= int(learned.size())) reason = "the layer made no such top";
        CORTADO_REQUIRE(reason.empty(), source, ": layer '", layer.name(), "' (", layer.type(),
                        "): cannot learn the shape of its top '", layer.top(t), "' (", reason,
                        "); give it with --input_shape=", layer.top(t), ":N,C,H,W");
      }
    }
    LayerParameter input;
    input.set_name(layer.name());
    input.set_type("Input");
    for (int t : kept) {
      input.add_top(layer.top(t));
      BlobShape* shape = input.mutable_input_param()->add_shape();
      auto it = given.find(layer.top(t));
      const std::vector<int>& dims = it != given.end() ? it->second : learned[t];
      if (it != given.end()) used_given.insert(it->first);
      for (int d : dims) shape->add_dim(d);
      LOG(INFO) << "Data layer '" << layer.name() << "': its top '" << layer.top(t)
                << "' becomes an input of shape " << ShapeText(dims);
    }
    *deploy.add_layer() = input;
  }
  for (const auto& entry : options.input_shapes)
    CORTADO_REQUIRE(used_given.count(entry.first), source, ": --input_shape names '", entry.first,
                    "', which is no top of a data or Input layer that the exported net reads");
  return deploy;
}

void SetValueInfo(const std::string& name, const std::vector<int>& shape, bool dynamic,
                  onnx::ValueInfoProto* info) {
  info->set_name(name);
  onnx::TypeProto_Tensor* tensor = info->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx::TensorProto::FLOAT);
  onnx::TensorShapeProto* dims = tensor->mutable_shape();
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i == 0 && dynamic) dims->add_dim()->set_dim_param("N");
    else dims->add_dim()->set_dim_value(shape[i]);
  }
}

// Renames `from` to `to` in the nodes from index `first` on (the current layer's).
void RenameValue(onnx::GraphProto* graph, int first, const std::string& from, const std::string& to) {
  for (int n = first; n < graph->node_size(); ++n) {
    onnx::NodeProto* node = graph->mutable_node(n);
    for (int i = 0; i < node->input_size(); ++i)
      if (node->input(i) == from) node->set_input(i, to);
    for (int i = 0; i < node->output_size(); ++i)
      if (node->output(i) == from) node->set_output(i, to);
  }
}

bool ProducedSince(const onnx::GraphProto& graph, int first, const std::string& value) {
  for (int n = first; n < graph.node_size(); ++n)
    for (const std::string& out : graph.node(n).output())
      if (out == value) return true;
  return false;
}

// One line for all the layers that cannot be exported.
[[noreturn]] void FailRefused(const std::string& source, const std::vector<std::string>& refused) {
  std::ostringstream message;
  message << source << ": " << refused.size() << " layer" << (refused.size() == 1 ? "" : "s")
          << " cannot be expressed in ONNX: ";
  for (size_t k = 0; k < refused.size(); ++k) message << (k ? "; " : "") << refused[k];
  Fail(message.str());
}

// ONNX's own checks, as onnx.checker.check_model(model, full_check=True) runs them.
void CheckModel(const onnx::ModelProto& model) {
  try {
    onnx::checker::check_model(model);
    onnx::ModelProto inferred = model;
    onnx::shape_inference::InferShapes(inferred, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(true, 1, false));
  } catch (const std::exception& error) {
    LOG(FATAL) << "The exported ONNX model fails ONNX's checks (a bug of the exporter): " << error.what();
  }
}

}  // namespace
}  // namespace onnx_export

std::string ExportOnnxModel(const NetParameter& param, const std::string& weights_path,
                            const OnnxExportOptions& options, const std::string& source) {
  using namespace onnx_export;
  const NetParameter deploy = DeployNet(param, options, source);
  // Layers that can never be exported are refused before the net is built (a Python layer may not
  // even build here); those whose shapes or blobs decide are refused in the walk below.
  std::vector<std::string> refused;
  for (const LayerParameter& layer : deploy.layer()) {
    static const std::set<std::string> kWalked = {"Input", "Parameter", "Split", "Cast"};
    std::string why = kWalked.count(layer.type()) ? "" : UnsupportedReason(layer.type());
    if (layer.type() == "Pooling" && layer.pooling_param().pool() == PoolingParameter::STOCHASTIC)
      why = "STOCHASTIC pooling has no ONNX operator";
    if (!why.empty()) refused.push_back("'" + layer.name() + "' (" + layer.type() + "): " + why);
  }
  if (!refused.empty()) FailRefused(source, refused);
  // The net is built for its shapes and weights and never run: Cortado's own engines, so that no
  // convolution shape is timed (the setting is the process's, and comes back on any exit).
  struct KeepCpuEngine {
    CpuEngine saved = CpuEngineSetting();
    ~KeepCpuEngine() { SetCpuEngine(saved); }
  } keep_cpu_engine;
  SetCpuEngine(CpuEngine::kIm2col);
  Context ctx(Device::kCPU, 1);
  Net net(deploy, ctx, source);
  net.AllocateOwnArena();
  if (!weights_path.empty()) net.LoadWeightsFile(weights_path);
  else LOG(INFO) << "No weights file: the parameters are as the fillers of " << source << " make them";

  onnx::ModelProto model;
  model.set_ir_version(7);
  model.set_producer_name("Cortado");
  model.set_producer_version("1.0");
  onnx::OperatorSetIdProto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(13);
  onnx::GraphProto* graph = model.mutable_graph();
  graph->set_name(!options.graph_name.empty() ? options.graph_name
                                              : !net.name().empty() ? net.name() : std::string("cortado"));
  GraphWriter g(graph, options.dynamic_batch);

  const std::vector<std::string>& blob_names = net.blob_names();
  // The last (layer, top) writing each blob.
  std::map<int, int> last_writer;
  for (size_t i = 0; i < net.layers().size(); ++i)
    for (int id : net.top_ids()[i]) last_writer[id] = int(i);
  for (const auto& entry : last_writer) g.ReserveBlobName(blob_names[entry.first]);

  std::map<int, std::string> current;  // blob id -> the ONNX value holding it now
  for (size_t i = 0; i < net.layers().size(); ++i) {
    const Layer& layer = *net.layers()[i];
    const LayerParameter& lp = layer.layer_param();
    const std::string type = layer.type();
    const std::vector<int>& bottoms = net.bottom_ids()[i];
    const std::vector<int>& tops = net.top_ids()[i];
    auto top_name = [&](size_t t) {
      const int id = tops[t];
      const std::string& blob = blob_names[id];
      return last_writer[id] == int(i) ? g.ClaimBlobName(blob) : g.UniqueValue(blob + "/" + lp.name());
    };
    if (type == "Split" || type == "Cast") {  // a Cast (16-bit storage, NHWC) holds the same values
      for (int id : tops) current[id] = current.at(bottoms.at(0));
      continue;
    }
    if (type == "Input") {
      for (size_t t = 0; t < tops.size(); ++t) {
        current[tops[t]] = top_name(t);
        SetValueInfo(current[tops[t]], net.top_vecs()[i][t]->shape(), options.dynamic_batch, graph->add_input());
      }
      continue;
    }
    if (type == "Parameter") {
      const std::string name = top_name(0);
      const Blob& blob = *layer.blobs().at(0);
      onnx_tensors::SetFloats(name, std::vector<int64_t>(blob.shape().begin(), blob.shape().end()),
                              blob.ReadData().data(), graph->add_initializer());
      current[tops[0]] = name;
      continue;
    }
    LayerIO io;
    io.name = lp.name();
    io.type = type;
    io.param = &lp;
    for (size_t b = 0; b < bottoms.size(); ++b) {
      io.in.push_back(current.at(bottoms[b]));
      io.in_shapes.push_back(net.bottom_vecs()[i][b]->shape());
    }
    for (const Blob* top : net.top_vecs()[i]) io.out_shapes.push_back(top->shape());
    for (const auto& blob : layer.blobs()) {
      io.blobs.push_back(blob->ReadData());
      io.blob_shapes.push_back(blob->shape());
    }
    // Every type left has an emitter (the others were refused above); it may still refuse this layer.
    std::string why;
    std::vector<std::string> values;
    const int first_node = graph->node_size();
    if (!EmitLayer(g, io, &values, &why)) {
      refused.push_back("'" + lp.name() + "' (" + type + "): " + why);
      for (size_t t = 0; t < tops.size(); ++t) current[tops[t]] = top_name(t);
      continue;
    }
    CHECK_EQ(values.size(), tops.size()) << lp.name();
    for (size_t t = 0; t < tops.size(); ++t) {
      const std::string name = top_name(t);
      if (ProducedSince(*graph, first_node, values[t])) {
        RenameValue(graph, first_node, values[t], name);
      } else {
        g.AddNode("Identity", {values[t]}, {name}, lp.name());
      }
      current[tops[t]] = name;
    }
  }
  if (!refused.empty()) FailRefused(source, refused);
  CORTADO_REQUIRE(!net.output_blobs().empty(), source, ": the net has no output to export");
  for (size_t k = 0; k < net.output_blobs().size(); ++k) {
    const int id = net.output_blob_indices()[k];
    SetValueInfo(current.at(id), net.output_blobs()[k]->shape(), options.dynamic_batch, graph->add_output());
  }
  CheckModel(model);
  return model.SerializeAsString();
}

}  // namespace cortado
