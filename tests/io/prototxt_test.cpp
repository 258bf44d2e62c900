// prototxt_test.cpp — every Caffe example prototxt (unchanged copies in tests/compat/caffe-models)
// parses, and reading errors name the file, line and column.
#include <filesystem>
#include <fstream>

#include "cortado/error.hpp"
#include "cortado/io.hpp"
#include "cortado/net.hpp"
#include "test_util.hpp"

namespace cortado::test {

namespace fs = std::filesystem;

std::vector<fs::path> CompatPrototxts() {
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(SourceDir() + "/tests/compat/caffe-models"))
    if (entry.path().extension() == ".prototxt") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

TEST(Prototxt, EveryCaffeExampleParses) {
  const auto files = CompatPrototxts();
  ASSERT_GE(files.size(), 40u);
  int solvers = 0, nets = 0;
  for (const auto& path : files) {
    const bool is_solver = path.filename().string().find("solver") != std::string::npos;
    if (is_solver) {
      SolverParameter param;
      EXPECT_NO_THROW(ReadProtoFromTextFile(path.string(), &param)) << path;
      EXPECT_TRUE(param.has_base_lr()) << path;
      ++solvers;
    } else {
      NetParameter param;
      EXPECT_NO_THROW(ReadProtoFromTextFile(path.string(), &param)) << path;
      EXPECT_GT(param.layer_size() + param.layers_size(), 0) << path;
      ++nets;
    }
  }
  EXPECT_GE(solvers, 15);
  EXPECT_GE(nets, 19);
}

TEST(Prototxt, ShippedModelsParse) {
  for (const auto& entry : fs::recursive_directory_iterator(SourceDir() + "/models")) {
    if (entry.path().extension() != ".prototxt") continue;
    const bool is_solver = entry.path().filename().string().find("solver") != std::string::npos;
    SolverParameter solver;
    NetParameter net;
    if (is_solver) {
      EXPECT_NO_THROW(ReadProtoFromTextFile(entry.path().string(), &solver)) << entry.path();
    } else {
      EXPECT_NO_THROW(ReadProtoFromTextFile(entry.path().string(), &net)) << entry.path();
    }
  }
}

TEST(Prototxt, SyntaxErrorNamesFileLineAndColumn) {
  const std::string path = TempDir() + "/bad.prototxt";
  std::ofstream(path) << "name: \"x\"\nlayer {\n  name: \"a\"\n  type: \"ReLU\"\n  bottom: }\n";
  NetParameter param;
  try {
    ReadProtoFromTextFile(path, &param);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path + ":5:"), std::string::npos) << e.what();
  }
}

TEST(Prototxt, UnknownFieldIsNamed) {
  NetParameter param;
  try {
    ReadProtoFromTextString("layer { name: 'a' typo_field: 3 }", &param, "net.prototxt");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("net.prototxt:1:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("typo_field"), std::string::npos) << e.what();
  }
}

TEST(Prototxt, MissingFileIsAnError) {
  NetParameter param;
  EXPECT_THROW(ReadProtoFromTextFile("/nonexistent/net.prototxt", &param), Error);
}

// /dev/zero would be read for ever (a path a damaged .solverstate's learned_net could name).
TEST(Prototxt, ADeviceIsRefusedNotReadForEver) {
  NetParameter param;
  EXPECT_EQ(ErrorOf([&] { ReadProtoFromTextFile("/dev/zero", &param); }),
            "cannot read '/dev/zero': it is a device, not a file");
  EXPECT_EQ(ErrorOf([&] { ReadProtoFromBinaryFile("/dev/urandom", &param); }),
            "cannot read '/dev/urandom': it is a device, not a file");
}

TEST(BinaryProto, RoundTripAboveSixtyFourMiB) {
  // A NetParameter with one 80 MiB blob: protobuf's default limit would refuse to read it.
  NetParameter param;
  LayerParameter* layer = param.add_layer();
  layer->set_name("big");
  BlobProto* blob = layer->add_blobs();
  const int n = 20 * 1024 * 1024;
  blob->mutable_shape()->add_dim(n);
  blob->mutable_data()->Resize(n, 0.5f);
  blob->set_data(n - 1, 7.0f);
  const std::string path = TempDir() + "/big.caffemodel";
  WriteProtoToBinaryFile(param, path);
  NetParameter read;
  ReadProtoFromBinaryFile(path, &read);
  ASSERT_EQ(read.layer(0).blobs(0).data_size(), n);
  EXPECT_EQ(read.layer(0).blobs(0).data(n - 1), 7.0f);
  fs::remove(path);
}

TEST(BinaryProto, TruncatedFileIsAnError) {
  NetParameter param;
  param.add_layer()->set_name("conv1");
  param.mutable_layer(0)->add_blobs()->mutable_data()->Resize(1000, 1.0f);
  const std::string path = TempDir() + "/t.caffemodel";
  WriteProtoToBinaryFile(param, path);
  fs::resize_file(path, fs::file_size(path) / 2);
  NetParameter read;
  EXPECT_THROW(ReadProtoFromBinaryFile(path, &read), Error);
}

}  // namespace cortado::test
