// onnx_files.cpp — ONNX export and import between files (cortado/onnx.hpp): reads the inputs, checks
// them before any work, and writes each output atomically, so that a failed run leaves no file behind
// and no earlier file changed.
#include <string>

#include "cortado/cortado.pb.h"
#include "cortado/error.hpp"
#include "cortado/io.hpp"  // ReadWholeFile, WriteAtomically, WriteProto*
#include "cortado/onnx.hpp"
#include "cortado/upgrade.hpp"

namespace cortado {

void ExportOnnxFile(const std::string& net_path, const std::string& weights_path,
                    const std::string& onnx_path, const OnnxExportOptions& options) {
  NetParameter net;
  ReadProtoFromTextFile(net_path, &net);
  if (NetNeedsUpgrade(net)) UpgradeNet(&net, net_path);
  CORTADO_REQUIRE(weights_path.empty() || FileExists(weights_path), "weights file '", weights_path,
                  "' does not exist");
  WriteAtomically(onnx_path, ExportOnnxModel(net, weights_path, options, net_path));
}

void ImportOnnxFile(const std::string& onnx_path, const std::string& net_path,
                    const std::string& weights_path, const OnnxImportOptions& options) {
  CORTADO_REQUIRE(net_path != weights_path, "the prototxt and the weights must go to two files, both are '",
                  net_path, "'");
  CORTADO_REQUIRE(FileExists(onnx_path), "ONNX model '", onnx_path, "' does not exist");
  const ImportedNet imported = ImportOnnxModel(ReadWholeFile(onnx_path), options, onnx_path);
  WriteProtoToTextFile(imported.net, net_path);
  WriteProtoToBinaryFile(imported.weights, weights_path);
}

}  // namespace cortado
