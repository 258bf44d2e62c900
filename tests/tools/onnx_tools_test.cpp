// onnx_tools_test.cpp — export_onnx and import_onnx refuse what they cannot convert as a user's mistake
// must: exit 1, one "<tool>: error: ..." line naming the file and the layer or node, and no output file
// written or changed. (What they convert, and how exactly, is checked by tests/python/test_onnx_*.py
// against onnx.checker, OpenCV's dnn and PyTorch.)
#include <filesystem>

#include "bad_input.hpp"
#include "cortado/onnx.hpp"

namespace cortado::test {
namespace {

const char* const kLeNet = "models/mnist/lenet.prototxt";

bool Exists(const std::string& path) { return std::filesystem::exists(path); }

// A small deploy net with the given layers after its Input "data" (1×3×8×8).
std::string DeployNet(const std::string& dir, const std::string& layers) {
  const std::string path = dir + "/net.prototxt";
  WriteFile(path, "name: \"small\"\nlayer { name: \"data\" type: \"Input\" top: \"data\" "
                  "input_param { shape { dim: 1 dim: 3 dim: 8 dim: 8 } } }\n" + layers);
  return path;
}

class OnnxTools : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!BuiltWithOnnx()) GTEST_SKIP() << "this build has no ONNX support (libonnx-dev)";
    dir_ = TempDir();
  }
  std::string dir_;
};

}  // namespace

TEST_F(OnnxTools, CommandLineMistakes) {
  EXPECT_TRUE(Has(ToolError("export_onnx", kLeNet), "expected 3 arguments, got 1"));
  EXPECT_TRUE(Has(ToolError("import_onnx", "a.onnx b.prototxt"), "expected 3 arguments, got 2"));
  EXPECT_EQ(ToolError("import_onnx", "--batch_size=0 a b c"), "--batch_size=0 is out of range: it must be at least 1 and at most 16777216");
  EXPECT_TRUE(Has(ToolError("export_onnx", "--input_shape=data:1,x " + std::string(kLeNet) + " none o.onnx"),
                  "--input_shape: 'x' in 'data:1,x' is not a positive integer"));
}

TEST_F(OnnxTools, MissingInputsNameTheFileAndWriteNothing) {
  const std::string out = dir_ + "/out.onnx";
  EXPECT_TRUE(Has(ToolError("export_onnx", dir_ + "/missing.prototxt none " + out), dir_ + "/missing.prototxt"));
  EXPECT_TRUE(Has(ToolError("export_onnx", SourceDir() + "/" + kLeNet + " " + dir_ + "/missing.caffemodel " + out),
                  "weights file '" + dir_ + "/missing.caffemodel' does not exist"));
  EXPECT_FALSE(Exists(out));
  EXPECT_EQ(ToolError("import_onnx", dir_ + "/missing.onnx " + dir_ + "/n.prototxt " + dir_ + "/n.caffemodel"),
            "ONNX model '" + dir_ + "/missing.onnx' does not exist");
  EXPECT_FALSE(Exists(dir_ + "/n.prototxt"));
  EXPECT_FALSE(Exists(dir_ + "/n.caffemodel"));
}

TEST_F(OnnxTools, AFileThatIsNotAnOnnxModelIsRefusedAndEarlierOutputsStay) {
  WriteFile(dir_ + "/n.prototxt", "earlier");
  WriteFile(dir_ + "/n.caffemodel", "earlier");
  for (const std::string& bytes : {std::string("not a model at all\n"), std::string(), std::string("\x08\x07\x12", 3)}) {
    WriteFile(dir_ + "/bad.onnx", bytes);
    const std::string error =
        ToolError("import_onnx", dir_ + "/bad.onnx " + dir_ + "/n.prototxt " + dir_ + "/n.caffemodel");
    EXPECT_EQ(error.rfind(dir_ + "/bad.onnx: ", 0), 0u) << error;
  }
  EXPECT_EQ(ReadFile(dir_ + "/n.prototxt"), "earlier");
  EXPECT_EQ(ReadFile(dir_ + "/n.caffemodel"), "earlier");
}

TEST_F(OnnxTools, LayersOnnxCannotExpressAreNamedOnOneLine) {
  const std::string net = DeployNet(dir_, R"(
layer { name: "im2col" type: "Im2col" bottom: "data" top: "cols" convolution_param { kernel_size: 3 } }
layer { name: "spp" type: "SPP" bottom: "data" top: "spp" spp_param { pyramid_height: 2 } }
)");
  WriteFile(dir_ + "/out.onnx", "earlier");
  const std::string error = ToolError("export_onnx", net + " none " + dir_ + "/out.onnx");
  EXPECT_EQ(error.rfind(net + ": ", 0), 0u) << error;
  EXPECT_TRUE(Has(error, "'im2col' (Im2col)")) << error;
  EXPECT_TRUE(Has(error, "'spp' (SPP)")) << error;
  EXPECT_EQ(ReadFile(dir_ + "/out.onnx"), "earlier");
}

TEST_F(OnnxTools, WeightsOfAnotherNetNameTheLayer) {
  const std::string net = DeployNet(dir_, R"(
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1" convolution_param { num_output: 4 kernel_size: 3 } }
)");
  const std::string other = DeployNet(NewTempDir(), R"(
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1" convolution_param { num_output: 5 kernel_size: 3 } }
)");
  // The other net's weights, written by exporting and importing it back.
  ASSERT_EQ(RunCommand(ToolPath("export_onnx") + " " + other + " none " + dir_ + "/other.onnx").exit_code, 0);
  ASSERT_EQ(RunCommand(ToolPath("import_onnx") + " " + dir_ + "/other.onnx " + dir_ + "/other.prototxt " + dir_ +
                       "/other.caffemodel").exit_code, 0);
  const std::string error = ToolError("export_onnx", net + " " + dir_ + "/other.caffemodel " + dir_ + "/out.onnx");
  EXPECT_TRUE(Has(error, "layer conv1 (Convolution)")) << error;
  EXPECT_FALSE(Exists(dir_ + "/out.onnx"));
}

// What fuzz/regressions/onnx_model/ holds: models the onnx_model fuzzer found crashing the import, each
// now refused with one line.
TEST_F(OnnxTools, FuzzFindingsAreRefusedOnOneLine) {
  const std::string regressions = SourceDir() + "/fuzz/regressions/onnx_model/";
  const std::pair<const char*, const char*> cases[] = {
      // A UINT8 initializer whose raw bytes outnumber its shape's elements (a CHECK when written back).
      {"uint8_initializer_overfilling_its_shape.onnx",
       "initializer 'conv/weight': it holds 72 values but its shape [2,1,3,1] holds 6"},
      // A zero stride, which ONNX 1.12's shape inference divides by (a floating-point exception).
      {"zero_stride_in_shape_inference.onnx", "node '/MaxPool' (MaxPool): its strides must be positive, got 0"},
      // Constants of different ranks concatenated while folding (read past a shape).
      {"concat_of_constants_differing_in_rank.onnx", "node '/Concat' (Concat): Concat's inputs differ in rank"},
      // A constant broadcast against an empty one (read past the empty one's values).
      {"broadcast_against_an_empty_constant.onnx", "node 'conv' (Crop): ONNX has no operator Crop at opset 13"},
      // An initializer whose dims multiply past int64 (an overflow while counting its values).
      {"initializer_dims_overflowing_int64.onnx", "initializer 'ip/weight': its dims are not a tensor's shape"},
      // Reshape dims whose product overflowed int64 in the Reshape layer.
      {"reshape_dims_overflowing_int64.onnx", "past the largest blob dimension 2147483647"},
  };
  for (const auto& [file, message] : cases) {
    const std::string error = ToolError("import_onnx", regressions + file + " " + dir_ + "/n.prototxt " + dir_ + "/n.caffemodel");
    EXPECT_TRUE(Has(error, message)) << file << ": " << error;
    EXPECT_FALSE(Exists(dir_ + "/n.prototxt"));
  }
}

}  // namespace cortado::test
