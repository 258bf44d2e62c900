// onnx_stub.cpp — ONNX export and import in a build without the ONNX library: each says what is missing.
#include "cortado/error.hpp"
#include "cortado/onnx.hpp"

namespace cortado {
namespace {
[[noreturn]] void NoOnnx(const std::string& source) {
  Fail(source, ": this build of Cortado has no ONNX support (install libonnx-dev, e.g. with "
       "scripts/install_deps.sh, and rebuild)");
}
}  // namespace

bool BuiltWithOnnx() { return false; }

std::string ExportOnnxModel(const NetParameter&, const std::string&, const OnnxExportOptions&,
                            const std::string& source) {
  NoOnnx(source);
}

ImportedNet ImportOnnxModel(const std::string&, const OnnxImportOptions&, const std::string& source) {
  NoOnnx(source);
}

}  // namespace cortado
