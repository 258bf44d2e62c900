// export_onnx.cpp — writes a Cortado (Caffe) net and its weights as an ONNX model:
//   export_onnx [--fixed_batch] [--input_shape=data:1,3,224,224] NET.prototxt WEIGHTS.caffemodel OUT.onnx
// NET is a deploy net, or a training net whose data layers become the inputs and whose loss and
// Accuracy layers are left out. WEIGHTS may be a .caffemodel or .caffemodel.h5, or "none" for the
// parameters the fillers make. A layer ONNX cannot express ends the run with one line naming it.
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cortado/error.hpp"
#include "cortado/onnx.hpp"
#include "cortado/tool.hpp"

DEFINE_bool(fixed_batch, false,
            "Give the ONNX inputs and outputs the net's batch size instead of a symbolic batch axis 'N'");
DEFINE_string(input_shape, "",
              "Shapes of data layers' tops, as NAME:D0,D1,...[;NAME:...] (default: build the data layer and "
              "read one record to learn them)");

namespace {

// "data:1,3,224,224;label:1" → {("data", {1,3,224,224}), ("label", {1})}.
std::vector<std::pair<std::string, std::vector<int>>> ParseInputShapes(const std::string& text) {
  std::vector<std::pair<std::string, std::vector<int>>> shapes;
  std::stringstream entries(text);
  std::string entry;
  while (std::getline(entries, entry, ';')) {
    const size_t colon = entry.find(':');
    CORTADO_REQUIRE(colon != std::string::npos && colon > 0, "--input_shape: '", entry,
                    "' is not NAME:D0,D1,... (e.g. data:1,3,224,224)");
    std::vector<int> dims;
    std::stringstream numbers(entry.substr(colon + 1));
    std::string number;
    while (std::getline(numbers, number, ',')) {
      size_t used = 0;
      int value = 0;
      try {
        value = std::stoi(number, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      CORTADO_REQUIRE(used == number.size() && value > 0, "--input_shape: '", number, "' in '", entry,
                      "' is not a positive integer");
      dims.push_back(value);
    }
    CORTADO_REQUIRE(!dims.empty(), "--input_shape: '", entry, "' has no dimensions");
    shapes.emplace_back(entry.substr(0, colon), dims);
  }
  return shapes;
}

}  // namespace

int main(int argc, char** argv) {
  const char* usage =
      "writes a net and its weights as an ONNX model\n"
      "usage: export_onnx [--fixed_batch] [--input_shape=NAME:D0,D1,...] NET.prototxt WEIGHTS.caffemodel|none "
      "OUT.onnx";
  return cortado::RunTool(argc, argv, usage, [](int argc, char** argv) {
    CORTADO_REQUIRE(argc == 4, "expected 3 arguments, got ", argc - 1,
                    "; usage: export_onnx [--fixed_batch] [--input_shape=NAME:D0,D1,...] NET.prototxt "
                    "WEIGHTS.caffemodel|none OUT.onnx");
    cortado::OnnxExportOptions options;
    options.dynamic_batch = !FLAGS_fixed_batch;
    options.input_shapes = ParseInputShapes(FLAGS_input_shape);
    const std::string weights = std::string(argv[2]) == "none" ? "" : argv[2];
    cortado::RequireOutputIsNotAnInput(argv[3], {argv[1], argv[2]});
    cortado::ExportOnnxFile(argv[1], weights, argv[3], options);
    LOG(INFO) << "Wrote " << argv[3];
    return 0;
  });
}
