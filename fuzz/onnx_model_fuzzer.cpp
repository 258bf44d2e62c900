// onnx_model_fuzzer.cpp — an ONNX model, as import_onnx reads one: checked, folded and mapped to a net
// and its weights (ImportOnnxModel); a model that maps is then built as a net on a planning context
// (every layer shaped, nothing allocated), as trainer would build the prototxt import_onnx writes.
#include "cortado/onnx.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  cortado::fuzz::Run([&] {
    const cortado::ImportedNet imported = cortado::ImportOnnxModel(bytes, cortado::OnnxImportOptions(), "model.onnx");
    cortado::fuzz::PlannedBytes(imported.net, "model.onnx");
  });
  return 0;
}
