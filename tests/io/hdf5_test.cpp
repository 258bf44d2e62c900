// hdf5_test.cpp — HDF5 snapshots in Caffe's layout: our own round trips, files written by an
// independent writer the way Caffe writes them (h5py, tests/io/hdf5_caffe_layout.py), our files as
// h5py sees them, and errors that name the file without libhdf5 printing anything.
#include <google/protobuf/util/message_differencer.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "cortado/error.hpp"
#include "cortado/hdf5.hpp"
#include "cortado/io.hpp"
#include "cortado/net.hpp"
#include "test_util.hpp"

namespace cortado::test {

namespace {

namespace fs = std::filesystem;

// The value formula shared with the Python helper's value().
float ExpectedValue(int layer, int blob, int64_t i) {
  return static_cast<float>(((i * 37) % 101) / 7.0 - 5.0 + layer + 0.125 * blob);
}

int64_t CountOf(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  return count;
}

// A blob of the given shape whose data follow ExpectedValue(layer, blob, i) and, when with_diff, whose
// diff follows ExpectedValue(layer + 10, blob, i).
BlobProto MakeBlob(const std::vector<int64_t>& shape, int layer, int blob, bool with_diff) {
  BlobProto proto;
  for (int64_t d : shape) proto.mutable_shape()->add_dim(d);
  for (int64_t i = 0; i < CountOf(shape); ++i) {
    proto.add_data(ExpectedValue(layer, blob, i));
    if (with_diff) proto.add_diff(ExpectedValue(layer + 10, blob, i));
  }
  return proto;
}

std::vector<int64_t> ShapeOf(const BlobProto& blob) {
  return std::vector<int64_t>(blob.shape().dim().begin(), blob.shape().dim().end());
}

uint32_t Bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

// Values compared bit for bit (so that NaN, -0 and denormals must survive too).
void ExpectSameValues(const google::protobuf::RepeatedField<float>& actual,
                      const google::protobuf::RepeatedField<float>& expected, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (int i = 0; i < actual.size(); ++i)
    ASSERT_EQ(Bits(actual.Get(i)), Bits(expected.Get(i))) << what << " value " << i;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string Helper() { return "/usr/bin/python3 " + SourceDir() + "/tests/io/hdf5_caffe_layout.py"; }

bool HaveH5py() { return RunCommand("/usr/bin/python3 -c 'import h5py'").exit_code == 0; }

#define SKIP_WITHOUT_HDF5() \
  if (!HaveHdf5Support()) GTEST_SKIP() << "this build has no HDF5"
#define SKIP_WITHOUT_H5PY() \
  if (!HaveH5py()) GTEST_SKIP() << "/usr/bin/python3 has no h5py (apt install python3-h5py)"

// A net with nested layer names (GoogLeNet's "inception_3a/1x1"), a layer without blobs, a scalar blob,
// a legacy 4-axis blob and special float values.
NetParameter SampleNet(bool with_diff) {
  NetParameter net;
  auto add_layer = [&](const std::string& name, const std::vector<std::vector<int64_t>>& shapes, int layer) {
    LayerParameter* param = net.add_layer();
    param->set_name(name);
    param->set_type("Whatever");
    for (size_t j = 0; j < shapes.size(); ++j)
      *param->add_blobs() = MakeBlob(shapes[j], layer, static_cast<int>(j), with_diff);
    return param;
  };
  LayerParameter* conv = add_layer("zconv1", {{3, 2, 5, 5}, {3}}, 0);
  conv->mutable_blobs(0)->set_data(1, std::numeric_limits<float>::quiet_NaN());
  conv->mutable_blobs(0)->set_data(2, -0.0f);
  conv->mutable_blobs(0)->set_data(3, std::numeric_limits<float>::denorm_min());
  conv->mutable_blobs(0)->set_data(4, -std::numeric_limits<float>::infinity());
  add_layer("relu1", {}, 1);
  add_layer("inception_3a/1x1", {{4, 3, 1, 1}, {4}}, 2);
  add_layer("inception_3a/3x3", {{2, 4, 3, 3}, {2}}, 3);
  add_layer("fc", {{7, 12}, {7}}, 4);
  add_layer("scale", {{}}, 5);
  return net;
}

SolverState SampleState() {
  SolverState state;
  state.set_iter(4200);
  state.set_learned_net("snapshots/net_iter_4200.caffemodel.h5");
  state.set_current_step(3);
  *state.add_history() = MakeBlob({3, 2, 5, 5}, 20, 0, false);
  *state.add_history() = MakeBlob({3}, 20, 1, false);
  *state.add_history() = MakeBlob({7, 12}, 20, 2, false);
  state.set_rng_state(std::string("\x00\xff\x07\x00seed\x80", 9));
  state.add_reader_position(0);
  state.add_reader_position(12345678901234ull);
  state.add_reader_position(std::numeric_limits<uint64_t>::max());
  state.add_reader_seed(7);
  return state;
}

std::string Tuple(const std::vector<int64_t>& dims) {
  std::string text = "(";
  for (size_t i = 0; i < dims.size(); ++i) text += (i ? ", " : "") + std::to_string(dims[i]);
  return text + (dims.size() == 1 ? ",)" : ")");
}

// The dump line hdf5_caffe_layout.py prints for a float32 dataset.
std::string FloatLine(const std::string& path, const BlobProto& blob, bool diff) {
  std::string line = "dataset " + path + " <f4 shape=" + Tuple(ShapeOf(blob)) + " values=";
  const auto& values = diff ? blob.diff() : blob.data();
  char hex[9];
  for (int i = 0; i < values.size(); ++i) {
    std::snprintf(hex, sizeof hex, "%08x", Bits(values.Get(i)));
    line += (i ? "," : "") + std::string(hex);
  }
  return line;
}

std::vector<std::string> DumpLines(const std::string& h5_path, const std::string& out) {
  const CommandResult result = RunCommand(Helper() + " dump " + h5_path + " " + out);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  std::vector<std::string> lines;
  std::istringstream text(ReadText(out));
  for (std::string line; std::getline(text, line);) lines.push_back(line);
  return lines;
}

// What libhdf5 (or anything else) prints on stderr while body runs; body must throw cortado::Error.
std::pair<std::string, std::string> ErrorAndStderr(const std::function<void()>& body) {
  testing::internal::CaptureStderr();
  std::string message;
  try {
    body();
  } catch (const Error& e) {
    message = e.what();
  }
  return {message, testing::internal::GetCapturedStderr()};
}

}  // namespace

TEST(Hdf5, PathsEndingInH5AreHdf5) {
  EXPECT_TRUE(IsHdf5Path("snap/lenet_iter_100.caffemodel.h5"));
  EXPECT_TRUE(IsHdf5Path("x.solverstate.h5"));
  EXPECT_FALSE(IsHdf5Path("lenet_iter_100.caffemodel"));
  EXPECT_FALSE(IsHdf5Path("model.h5.caffemodel"));
  EXPECT_FALSE(IsHdf5Path("h5"));
}

TEST(Hdf5, BuildWithoutHdf5SaysHowToGetIt) {
  if (HaveHdf5Support()) GTEST_SKIP() << "this build has HDF5";
  const std::string hint = "this build of Cortado has no HDF5 support; rebuild with libhdf5-dev";
  EXPECT_NE(ErrorOf([] { ReadNetParameterFromHdf5("a.caffemodel.h5"); }).find(hint), std::string::npos);
  EXPECT_NE(ErrorOf([] { WriteNetParameterToHdf5(NetParameter(), "a.caffemodel.h5"); }).find(hint),
            std::string::npos);
  EXPECT_NE(ErrorOf([] { ReadSolverStateFromHdf5("a.solverstate.h5"); }).find(hint), std::string::npos);
  EXPECT_NE(ErrorOf([] { WriteSolverStateToHdf5(SolverState(), "a.solverstate.h5"); }).find(hint),
            std::string::npos);
}

TEST(Hdf5, NetRoundTripKeepsLayerOrderShapesDataAndDiff) {
  SKIP_WITHOUT_HDF5();
  const std::string path = TempDir() + "/net.caffemodel.h5";
  for (bool with_diff : {true, false}) {
    const NetParameter written = SampleNet(with_diff);
    WriteNetParameterToHdf5(written, path);
    const NetParameter read = ReadNetParameterFromHdf5(path);
    // relu1 has no blobs and is not stored; the others come back in the order written.
    std::vector<std::string> names;
    for (const auto& layer : read.layer()) names.push_back(layer.name());
    EXPECT_EQ(names, (std::vector<std::string>{"zconv1", "inception_3a/1x1", "inception_3a/3x3", "fc", "scale"}));
    for (const auto& layer : read.layer()) {
      const auto& original = *std::find_if(written.layer().begin(), written.layer().end(),
                                           [&](const LayerParameter& l) { return l.name() == layer.name(); });
      ASSERT_EQ(layer.blobs_size(), original.blobs_size()) << layer.name();
      for (int j = 0; j < layer.blobs_size(); ++j) {
        const std::string what = layer.name() + " blob " + std::to_string(j);
        EXPECT_EQ(ShapeOf(layer.blobs(j)), ShapeOf(original.blobs(j))) << what;
        ExpectSameValues(layer.blobs(j).data(), original.blobs(j).data(), what + " data");
        ExpectSameValues(layer.blobs(j).diff(), original.blobs(j).diff(), what + " diff");
      }
    }
  }
}

TEST(Hdf5, NetWeightsGoThroughAFileIntoAnotherNet) {
  SKIP_WITHOUT_HDF5();
  NetParameter param;
  ReadProtoFromTextString(R"(
    layer { name: "x" type: "Input" top: "x" input_param { shape { dim: 2 dim: 5 } } }
    layer { name: "fc/1" type: "InnerProduct" bottom: "x" top: "h"
            inner_product_param { num_output: 4 weight_filler { type: "gaussian" } bias_filler { type: "gaussian" } } }
    layer { name: "relu" type: "ReLU" bottom: "h" top: "h" }
    layer { name: "fc/2" type: "InnerProduct" bottom: "h" top: "y"
            inner_product_param { num_output: 3 weight_filler { type: "gaussian" } bias_filler { type: "gaussian" } } }
  )", &param, "hdf5_net");
  Context ctx(Device::kCPU, 3), other_ctx(Device::kCPU, 99);
  Net net(param, ctx), other(param, other_ctx);
  net.AllocateOwnArena();
  other.AllocateOwnArena();
  ASSERT_NE(other.param_data()[0], net.param_data()[0]);
  NetParameter saved;
  net.ToProto(&saved);
  const std::string path = TempDir() + "/fc.caffemodel.h5";
  WriteNetParameterToHdf5(saved, path);
  other.CopyTrainedLayersFrom(ReadNetParameterFromHdf5(path));
  ASSERT_EQ(other.param_count(), net.param_count());
  for (int64_t i = 0; i < net.param_count(); ++i) EXPECT_EQ(other.param_data()[i], net.param_data()[i]) << i;
}

TEST(Hdf5, LegacyFourAxisBlobIsStoredWithItsShape) {
  SKIP_WITHOUT_HDF5();
  NetParameter net;
  LayerParameter* layer = net.add_layer();
  layer->set_name("old");
  BlobProto* blob = layer->add_blobs();
  blob->set_num(2);
  blob->set_channels(1);
  blob->set_height(1);
  blob->set_width(3);
  for (int i = 0; i < 6; ++i) blob->add_data(ExpectedValue(0, 0, i));
  const std::string path = TempDir() + "/legacy.caffemodel.h5";
  WriteNetParameterToHdf5(net, path);
  const BlobProto read = ReadNetParameterFromHdf5(path).layer(0).blobs(0);
  EXPECT_EQ(ShapeOf(read), (std::vector<int64_t>{2, 1, 1, 3}));
  ExpectSameValues(read.data(), blob->data(), "old blob 0");
}

TEST(Hdf5, SolverStateRoundTripKeepsCortadoFields) {
  SKIP_WITHOUT_HDF5();
  const std::string path = TempDir() + "/net.solverstate.h5";
  const SolverState written = SampleState();
  WriteSolverStateToHdf5(written, path);
  const SolverState read = ReadSolverStateFromHdf5(path);
  std::string difference;
  google::protobuf::util::MessageDifferencer differ;
  differ.ReportDifferencesToString(&difference);
  EXPECT_TRUE(differ.Compare(read, written)) << difference;
  EXPECT_EQ(read.rng_state().size(), 9u);

  // Unset Cortado fields stay unset; a set but empty rng_state stays set.
  SolverState bare;
  bare.set_iter(1);
  *bare.add_history() = MakeBlob({2}, 0, 0, false);
  WriteSolverStateToHdf5(bare, path);
  SolverState read_bare = ReadSolverStateFromHdf5(path);
  EXPECT_FALSE(read_bare.has_rng_state());
  EXPECT_EQ(read_bare.reader_position_size(), 0);
  EXPECT_EQ(read_bare.learned_net(), "");
  bare.set_rng_state("");
  WriteSolverStateToHdf5(bare, path);
  read_bare = ReadSolverStateFromHdf5(path);
  EXPECT_TRUE(read_bare.has_rng_state());
  EXPECT_EQ(read_bare.rng_state(), "");
}

TEST(Hdf5, ReadsFilesWrittenTheWayCaffeWritesThem) {
  SKIP_WITHOUT_HDF5();
  SKIP_WITHOUT_H5PY();
  const std::string dir = TempDir();
  const CommandResult result = RunCommand(Helper() + " write-caffe " + dir);
  ASSERT_EQ(result.exit_code, 0) << result.err;

  // Caffe's groups keep no creation order: layers come by name, as Caffe itself reads them.
  const NetParameter net = ReadNetParameterFromHdf5(dir + "/caffe.caffemodel.h5");
  std::vector<std::string> names;
  for (const auto& layer : net.layer()) names.push_back(layer.name());
  ASSERT_EQ(names, (std::vector<std::string>{"conv1", "conv1_p", "ip2", "relu1"}));
  struct Expected {
    int layer;
    std::vector<std::vector<int64_t>> shapes;
  };
  const Expected expected[] = {{0, {{2, 1, 3, 3}, {2}}}, {3, {{2, 1, 3, 3}, {2}}}, {2, {{4, 18}, {4}}}, {1, {}}};
  for (int l = 0; l < 4; ++l) {
    const LayerParameter& layer = net.layer(l);
    ASSERT_EQ(layer.blobs_size(), static_cast<int>(expected[l].shapes.size())) << layer.name();
    for (int j = 0; j < layer.blobs_size(); ++j) {
      const BlobProto reference = MakeBlob(expected[l].shapes[j], expected[l].layer, j, true);
      const std::string what = layer.name() + " blob " + std::to_string(j);
      EXPECT_EQ(ShapeOf(layer.blobs(j)), expected[l].shapes[j]) << what;
      ExpectSameValues(layer.blobs(j).diff(), reference.diff(), what + " diff");
      // conv1_p's weights are shared with conv1: Caffe stores its gradient but not its values.
      if (layer.name() == "conv1_p" && j == 0) {
        EXPECT_EQ(layer.blobs(j).data_size(), 0);
      } else {
        ExpectSameValues(layer.blobs(j).data(), reference.data(), what + " data");
      }
    }
  }

  const SolverState state = ReadSolverStateFromHdf5(dir + "/caffe.solverstate.h5");
  EXPECT_EQ(state.iter(), 1234);
  EXPECT_EQ(state.learned_net(), "snapshots/caffe_iter_1234.caffemodel.h5");
  EXPECT_EQ(state.current_step(), 2);
  ASSERT_EQ(state.history_size(), 11);  // "10" sorts before "2" by name; history keeps index order
  for (int i = 0; i < 11; ++i) {
    const std::vector<int64_t> shape = i % 2 ? std::vector<int64_t>{i + 1} : std::vector<int64_t>{2, i + 1};
    EXPECT_EQ(ShapeOf(state.history(i)), shape) << "history " << i;
    ExpectSameValues(state.history(i).data(), MakeBlob(shape, 100, i, false).data(),
                     "history " + std::to_string(i));
  }
  EXPECT_FALSE(state.has_rng_state());
  EXPECT_EQ(state.reader_position_size(), 0);

  // h5py's own defaults: a variable-length string, int64 scalars, float64 history.
  const SolverState h5py_state = ReadSolverStateFromHdf5(dir + "/h5py.solverstate.h5");
  EXPECT_EQ(h5py_state.iter(), 77);
  EXPECT_EQ(h5py_state.learned_net(), "weights.caffemodel.h5");
  EXPECT_EQ(h5py_state.current_step(), 1);
  ASSERT_EQ(h5py_state.history_size(), 1);
  ExpectSameValues(h5py_state.history(0).data(), MakeBlob({3}, 5, 0, false).data(), "h5py history 0");
}

TEST(Hdf5, OurFilesHaveCaffesLayoutForH5py) {
  SKIP_WITHOUT_HDF5();
  SKIP_WITHOUT_H5PY();
  const std::string dir = TempDir();
  NetParameter net;
  auto add_layer = [&](const std::string& name, const std::vector<std::vector<int64_t>>& shapes, int number) {
    LayerParameter* layer = net.add_layer();
    layer->set_name(name);
    for (size_t j = 0; j < shapes.size(); ++j)
      *layer->add_blobs() = MakeBlob(shapes[j], number, static_cast<int>(j), true);
  };
  add_layer("conv1", {{2, 1, 2, 2}, {2}}, 0);
  add_layer("relu1", {}, 1);
  add_layer("inception_3a/1x1", {{3, 2}}, 2);
  add_layer("fc", {{3, 4}, {3}}, 3);
  WriteNetParameterToHdf5(net, dir + "/ours.caffemodel.h5");

  std::vector<std::string> expected = {
      "group / order=name children=data,diff",
      "group /data order=created children=conv1,inception_3a,fc",
      "group /diff order=created children=conv1,inception_3a,fc",
  };
  for (const char* top : {"data", "diff"}) {
    const std::string root = std::string("/") + top;
    expected.push_back("group " + root + "/conv1 order=created children=0,1");
    expected.push_back("group " + root + "/inception_3a order=created children=1x1");
    expected.push_back("group " + root + "/inception_3a/1x1 order=created children=0");
    expected.push_back("group " + root + "/fc order=created children=0,1");
    for (const auto& layer : net.layer())
      for (int j = 0; j < layer.blobs_size(); ++j)
        expected.push_back(FloatLine(root + "/" + layer.name() + "/" + std::to_string(j), layer.blobs(j),
                                     std::string(top) == "diff"));
  }
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(DumpLines(dir + "/ours.caffemodel.h5", dir + "/net.txt"), expected);

  // Without diff values there is no /diff group.
  for (auto& layer : *net.mutable_layer())
    for (auto& blob : *layer.mutable_blobs()) blob.clear_diff();
  WriteNetParameterToHdf5(net, dir + "/nodiff.caffemodel.h5");
  const auto lines = DumpLines(dir + "/nodiff.caffemodel.h5", dir + "/nodiff.txt");
  EXPECT_NE(std::find(lines.begin(), lines.end(), "group / order=name children=data"), lines.end());

  const SolverState state = SampleState();
  WriteSolverStateToHdf5(state, dir + "/ours.solverstate.h5");
  std::vector<std::string> expected_state = {
      "group / order=name children=cortado_reader_position,cortado_reader_seed,cortado_rng_state,"
      "current_step,history,iter,learned_net",
      "dataset /iter <i4 shape=(1,) values=4200",
      "dataset /current_step <i4 shape=(1,) values=3",
      // Caffe's hdf5_save_string: strlen + 1 bytes, NUL-terminated, scalar.
      "dataset /learned_net string fixed size=38 pad=nullterm shape=() "
      "value=b'snapshots/net_iter_4200.caffemodel.h5'",
      "group /history order=name children=0,1,2",
      "dataset /cortado_rng_state |u1 shape=(9,) values=0,255,7,0,115,101,101,100,128",
      "dataset /cortado_reader_position <u8 shape=(3,) values=0,12345678901234,18446744073709551615",
      "dataset /cortado_reader_seed <u8 shape=(1,) values=7",
  };
  for (int i = 0; i < state.history_size(); ++i)
    expected_state.push_back(FloatLine("/history/" + std::to_string(i), state.history(i), false));
  std::sort(expected_state.begin(), expected_state.end());
  EXPECT_EQ(DumpLines(dir + "/ours.solverstate.h5", dir + "/state.txt"), expected_state);
}

TEST(Hdf5, BadFilesAreErrorsNamingTheFileWithNothingOnStderr) {
  SKIP_WITHOUT_HDF5();
  const std::string dir = TempDir();
  WriteNetParameterToHdf5(SampleNet(true), dir + "/good.caffemodel.h5");
  WriteSolverStateToHdf5(SampleState(), dir + "/good.solverstate.h5");
  std::ofstream(dir + "/text.caffemodel.h5") << "name: \"not hdf5\"\n";
  const std::string good = ReadText(dir + "/good.caffemodel.h5");
  std::ofstream(dir + "/cut.caffemodel.h5", std::ios::binary) << good.substr(0, good.size() / 2);

  struct Case {
    std::string path;
    std::function<void(const std::string&)> read;
    std::string reason;
  };
  auto read_net = [](const std::string& p) { ReadNetParameterFromHdf5(p); };
  auto read_state = [](const std::string& p) { ReadSolverStateFromHdf5(p); };
  const Case cases[] = {
      {dir + "/missing.caffemodel.h5", read_net, "no such file"},
      {dir + "/missing.solverstate.h5", read_state, "no such file"},
      {dir + "/text.caffemodel.h5", read_net, "not an HDF5 file"},
      {dir + "/text.caffemodel.h5", read_state, "not an HDF5 file"},
      {dir + "/cut.caffemodel.h5", read_net, "truncated"},
      {dir + "/good.solverstate.h5", read_net, "no group /data"},
      {dir + "/good.caffemodel.h5", read_state, "no dataset /iter"},
      {dir, read_net, "it is a directory"},
  };
  for (const Case& c : cases) {
    const auto [message, err] = ErrorAndStderr([&] { c.read(c.path); });
    EXPECT_NE(message.find("'" + c.path + "'"), std::string::npos) << message;
    EXPECT_NE(message.find(c.reason), std::string::npos) << message;
    EXPECT_EQ(err, "") << c.path;
  }
  const std::string unwritable = dir + "/no/such/dir/x.caffemodel.h5";
  const auto [message, err] = ErrorAndStderr([&] { WriteNetParameterToHdf5(SampleNet(false), unwritable); });
  EXPECT_NE(message.find("'" + unwritable + "'"), std::string::npos) << message;
  EXPECT_EQ(err, "");
}

TEST(Hdf5, FailedWriteLeavesThePreviousFileAndNoTemporary) {
  SKIP_WITHOUT_HDF5();
  const std::string dir = TempDir(), path = dir + "/net.caffemodel.h5";
  const NetParameter good = SampleNet(false);
  WriteNetParameterToHdf5(good, path);
  NetParameter bad = good;
  bad.mutable_layer(4)->mutable_blobs(0)->add_data(1.0f);  // fc: one value more than its shape holds
  const std::string message = ErrorOf([&] { WriteNetParameterToHdf5(bad, path); });
  EXPECT_NE(message.find("/data/fc/0 holds 85 values but its shape needs 84"), std::string::npos) << message;
  NetParameter twice = good;
  *twice.add_layer() = good.layer(0);  // a layer name used twice
  EXPECT_NE(ErrorOf([&] { WriteNetParameterToHdf5(twice, path); }).find("'" + path + "'"), std::string::npos);

  const NetParameter read = ReadNetParameterFromHdf5(path);
  ASSERT_EQ(read.layer_size(), 5);
  ExpectSameValues(read.layer(3).blobs(0).data(), good.layer(4).blobs(0).data(), "fc blob 0");
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(dir)) files.push_back(entry.path().filename().string());
  EXPECT_EQ(files, std::vector<std::string>{"net.caffemodel.h5"});
}

// A damaged file that made libhdf5 free a wild pointer (found by fuzzing; the sanitizer build sees the
// bad free, others may not): read in a child process, it is an Error naming the file either way.
TEST(Hdf5, AFileLibhdf5CrashesOnIsAnErrorNamingIt) {
  SKIP_WITHOUT_HDF5();
  const std::string path = TempDir() + "/damaged.caffemodel.h5";
  fs::copy_file(SourceDir() + "/fuzz/regressions/caffemodel_h5/hdf5_bad_free_in_link_table.h5", path);
  const std::string error = ErrorOf([&] { ReadNetParameterFromHdf5(path); });
  EXPECT_EQ(error.rfind("cannot read '" + path + "': ", 0), 0u) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
}

// Sizes a file claims beyond what it stores are refused before anything is allocated for them (h5py
// writes both files as a hand or a damaged writer might): a compressed dataset whose chunks were never
// written, which reads as 2^31 - 1 fill values, and a learned_net string whose type claims 1 GiB.
TEST(Hdf5, SizesBeyondWhatTheFileStoresAreRefusedBeforeAllocating) {
  SKIP_WITHOUT_HDF5();
  SKIP_WITHOUT_H5PY();
  const std::string dir = TempDir();
  const std::string script = dir + "/make.py";
  std::ofstream(script) << "import h5py, numpy as np, sys\n"
                           "with h5py.File(sys.argv[1] + '/packed.h5', 'w') as f:\n"
                           "    f.create_dataset('data', shape=(2**31 - 1,), dtype='f4', chunks=(2**20,), "
                           "compression='gzip')\n"
                           "with h5py.File(sys.argv[1] + '/big_name.solverstate.h5', 'w') as f:\n"
                           "    f['iter'] = np.array([1], dtype='i4')\n"
                           "    f.create_dataset('learned_net', shape=(), dtype=h5py.string_dtype('ascii', 2**30))\n"
                           "    f.create_group('history')\n";
  ASSERT_EQ(RunCommand("/usr/bin/python3 " + script + " " + dir).exit_code, 0);
  EXPECT_EQ(ErrorOf([&] { ReadHdf5Datasets(dir + "/packed.h5", {"data"}); }),
            "cannot read '" + dir + "/packed.h5': /data claims 2147483647 values of 4 bytes but the file stores 0 "
            "bytes of them");
  EXPECT_EQ(ErrorOf([&] { ReadSolverStateFromHdf5(dir + "/big_name.solverstate.h5"); }),
            "cannot read '" + dir + "/big_name.solverstate.h5': /learned_net claims a string of 1073741824 bytes, "
            "more than the file stores");
}

// Solver states found by fuzzing whose damaged local heap made libhdf5 allocate 4 GiB while looking up
// /iter: read under the reading child's memory limit, each is one line naming the file.
TEST(Hdf5, AHeapClaimingGigabytesIsAnErrorNamingTheFile) {
  SKIP_WITHOUT_HDF5();
  const std::string regressions = SourceDir() + "/fuzz/regressions/solverstate_h5";
  int files = 0;
  for (const auto& entry : fs::directory_iterator(regressions)) {
    const std::string path = TempDir() + "/" + entry.path().filename().string();
    fs::copy_file(entry.path(), path);
    const std::string error = ErrorOf([&] { ReadSolverStateFromHdf5(path); });
    EXPECT_EQ(error.rfind("cannot read '" + path + "': ", 0), 0u) << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
    ++files;
  }
  EXPECT_GT(files, 0);
}

}  // namespace cortado::test
