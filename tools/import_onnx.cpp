// import_onnx.cpp — writes an ONNX model as a Cortado (Caffe) net and its weights:
//   import_onnx [--batch_size=N] IN.onnx OUT.prototxt OUT.caffemodel
// The prototxt has an Input layer per graph input; replace it with a data layer and add a loss to train
// (trainer train), or pass OUT.caffemodel as --weights to a training net of your own whose layers have
// the same names. An operator that has no Cortado layer ends the run with one line naming the node.
#include <gflags/gflags.h>
#include <glog/logging.h>

#include "cortado/error.hpp"
#include "cortado/onnx.hpp"
#include "cortado/tool.hpp"

DEFINE_int32(batch_size, 1, "The batch size of the Input layers where the model's batch axis is symbolic");

int main(int argc, char** argv) {
  const char* usage =
      "writes an ONNX model as a net and its weights\n"
      "usage: import_onnx [--batch_size=N] IN.onnx OUT.prototxt OUT.caffemodel";
  return cortado::RunTool(argc, argv, usage, [](int argc, char** argv) {
    CORTADO_REQUIRE(argc == 4, "expected 3 arguments, got ", argc - 1,
                    "; usage: import_onnx [--batch_size=N] IN.onnx OUT.prototxt OUT.caffemodel");
    cortado::CheckFlags({{"batch_size", 1, 1 << 24}});
    cortado::RequireOutputIsNotAnInput(argv[2], {argv[1]});
    cortado::RequireOutputIsNotAnInput(argv[3], {argv[1]});
    CORTADO_REQUIRE(std::string(argv[2]) != argv[3], "OUT.prototxt and OUT.caffemodel are both ", argv[2],
                    "; give the net and its weights two paths");
    cortado::OnnxImportOptions options;
    options.batch_size = FLAGS_batch_size;
    cortado::ImportOnnxFile(argv[1], argv[2], argv[3], options);
    LOG(INFO) << "Wrote " << argv[2] << " and " << argv[3];
    return 0;
  });
}
