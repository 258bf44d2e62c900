// onnx.hpp — ONNX export and import, with Cortado's layer graph as the meeting point.
//
// Export: a deploy net (or a training net, whose data layers become graph inputs and whose loss and
// Accuracy layers are left out, as Caffe users write deploy nets) and its weights become an ONNX model
// (opset 13) that passes onnx.checker with full checks. Every layer is one or a few ONNX nodes with the
// same arithmetic: Caffe's ceil-mode pooling sizes and its edge-window rule become explicit pads, a
// BatchNorm's moving-average scale factor a Div the importer recognises. A layer ONNX cannot express is
// an Error naming the layer, its type and why; never a silently wrong graph.
//
// Import: an ONNX model (opset 9 and newer) whose operators map to Cortado layers becomes a NetParameter
// (an Input layer per graph input; layers named after the nodes, tops after the tensors) and a weights
// NetParameter (.caffemodel) with the same layers. Shape computations that PyTorch's exporter emits
// (Shape, Gather, Unsqueeze, Concat, ... before a Reshape) are folded into constants. An operator that
// cannot be mapped is an Error naming the node and its op_type.
//
// A build without the ONNX library (libonnx-dev) has these functions too: they throw an Error saying so.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "cortado/cortado.pb.h"  // NetParameter

namespace cortado {

// Whether this build can export and import ONNX.
bool BuiltWithOnnx();

struct OnnxExportOptions {
  // Axis 0 of every graph input and output is the symbolic "N" (true) or the net's batch size (false).
  bool dynamic_batch = true;
  // Shapes of the data layers' tops, by top name ("data" -> {1, 3, 224, 224}); a data layer whose tops
  // are not given here is built (in the TEST phase) to learn them, which reads one record of its data.
  std::vector<std::pair<std::string, std::vector<int>>> input_shapes;
  // The graph's name and the model's producer fields.
  std::string graph_name;  // empty: the net's name
};

// The ONNX model of `net` (a prototxt's NetParameter, upgraded as needed) with the weights of the
// file `weights_path` (.caffemodel or .caffemodel.h5, layers matched by name as Caffe copies them; empty:
// every parameter as its filler makes it, which the log says). Returns the serialized ModelProto.
// `source` names the net in errors ("lenet.prototxt").
std::string ExportOnnxModel(const NetParameter& net, const std::string& weights_path,
                            const OnnxExportOptions& options, const std::string& source);

// Reads NET_PATH (prototxt) and WEIGHTS_PATH (.caffemodel or .caffemodel.h5; empty for filler-made
// weights) and writes the ONNX model to ONNX_PATH (atomically: nothing is written on any error).
void ExportOnnxFile(const std::string& net_path, const std::string& weights_path,
                    const std::string& onnx_path, const OnnxExportOptions& options);

struct OnnxImportOptions {
  // The batch size written into the Input layers where the model's axis 0 is symbolic (or not fixed).
  int batch_size = 1;
};

struct ImportedNet {
  NetParameter net;      // the prototxt: Input layers and the mapped layers, no blobs
  NetParameter weights;  // the .caffemodel: the same layers, with their blobs
};

// Maps a serialized ONNX ModelProto; `source` names the file in errors.
ImportedNet ImportOnnxModel(const std::string& model_bytes, const OnnxImportOptions& options,
                            const std::string& source);

// Reads ONNX_PATH and writes NET_PATH (prototxt) and WEIGHTS_PATH (.caffemodel), both atomically and
// only when the whole model mapped.
void ImportOnnxFile(const std::string& onnx_path, const std::string& net_path,
                    const std::string& weights_path, const OnnxImportOptions& options);

}  // namespace cortado
