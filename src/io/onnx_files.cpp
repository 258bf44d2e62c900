// onnx_files.cpp — ONNX export and import between files (cortado/onnx.hpp): reads the inputs, checks
// them before any work, and writes each output atomically, so that a failed run leaves no file behind
// and no earlier file changed.
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "cortado/cortado.pb.h"
#include "cortado/error.hpp"
#include "cortado/io.hpp"
#include "cortado/onnx.hpp"
#include "cortado/upgrade.hpp"

namespace cortado {
namespace {

std::string ReadBytes(const std::string& path, const char* what) {
  CORTADO_REQUIRE(FileExists(path), what, " '", path, "' does not exist");
  std::ifstream in(path, std::ios::binary);
  CORTADO_REQUIRE(in.good(), what, " '", path, "' cannot be read");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  CORTADO_REQUIRE(!in.bad(), what, " '", path, "' cannot be read");
  return bytes.str();
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  WriteFileAtomically(path, [&bytes](const std::string& temp_path) {
    std::ofstream out(temp_path, std::ios::binary);
    out.write(bytes.data(), std::streamsize(bytes.size()));
    out.close();
    CORTADO_REQUIRE(out.good(), "cannot write '", temp_path, "'");
  });
}

}  // namespace

void ExportOnnxFile(const std::string& net_path, const std::string& weights_path,
                    const std::string& onnx_path, const OnnxExportOptions& options) {
  NetParameter net;
  ReadProtoFromTextFile(net_path, &net);
  if (NetNeedsUpgrade(net)) UpgradeNet(&net, net_path);
  CORTADO_REQUIRE(weights_path.empty() || FileExists(weights_path), "weights file '", weights_path,
                  "' does not exist");
  const std::string model = ExportOnnxModel(net, weights_path, options, net_path);
  WriteBytes(onnx_path, model);
}

void ImportOnnxFile(const std::string& onnx_path, const std::string& net_path,
                    const std::string& weights_path, const OnnxImportOptions& options) {
  CORTADO_REQUIRE(net_path != weights_path, "the prototxt and the weights must go to two files, both are '",
                  net_path, "'");
  const ImportedNet imported = ImportOnnxModel(ReadBytes(onnx_path, "ONNX model"), options, onnx_path);
  WriteProtoToTextFile(imported.net, net_path);
  WriteProtoToBinaryFile(imported.weights, weights_path);
}

}  // namespace cortado
