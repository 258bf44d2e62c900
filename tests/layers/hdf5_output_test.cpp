// hdf5_output_test.cpp — HDF5Output: the file read back (ReadHdf5Datasets) holds the bottoms as /data
// and /label in Caffe's 4-axis layout; each forward appends, and the file is complete after each one while
// the layer lives (read by the HDF5Data layer, and by h5ls in another process when it is installed);
// an existing file is truncated; inside a net; Backward's zero gradients; one-line errors naming the
// layer (bad path, bottom counts, rows that change shape).
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "cortado/error.hpp"
#include "cortado/hdf5.hpp"    // HaveHdf5Support, ReadHdf5Datasets
#include "cortado/memory.hpp"  // MemoryPlan
#include "test_util.hpp"

namespace cortado::test {
namespace {

#define SKIP_WITHOUT_HDF5() \
  if (!HaveHdf5Support()) GTEST_SKIP() << "this build has no HDF5"

std::string LayerText(const std::string& file) {
  return "name: 'out' type: 'HDF5Output' bottom: 'data' bottom: 'label' hdf5_output_param { file_name: '" + file +
         "' }";
}

// Values that differ from batch to batch: data k·100 + i, label −(k·100 + n).
void FillBatch(LayerFixture& f, int k) {
  for (int64_t i = 0; i < f.bottom(0).count(); ++i) f.bottom(0).data()[i] = static_cast<float>(k * 100 + i);
  for (int64_t n = 0; n < f.bottom(1).count(); ++n) f.bottom(1).data()[n] = -static_cast<float>(k * 100 + n);
}

std::vector<float> Values(const Blob& blob) { return std::vector<float>(blob.data(), blob.data() + blob.count()); }

void ExpectLayerError(const std::string& message, const std::vector<std::string>& parts) {
  EXPECT_EQ(message.rfind("layer out (HDF5Output): ", 0), 0u) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  for (const std::string& part : parts) EXPECT_NE(message.find(part), std::string::npos) << message;
}

}  // namespace

// Caffe's layout: fewer than 4 axes are padded with trailing 1s (2×3×2 → 2×3×2×1, 2 → 2×1×1×1).
TEST(HDF5Output, WritesTheBottomsAsDataAndLabelInCaffesFourAxisLayout) {
  SKIP_WITHOUT_HDF5();
  const std::string file = TempDir() + "/out.h5";
  LayerFixture f(LayerText(file), {{2, 3, 2}, {2}}, 0);
  FillBatch(f, 0);
  EXPECT_EQ(f.Forward(), 0.0f);
  const std::vector<Hdf5Dataset> read = ReadHdf5Datasets(file, {"data", "label"});
  EXPECT_EQ(read[0].dims, (std::vector<int64_t>{2, 3, 2, 1}));
  EXPECT_EQ(read[0].values, (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
  EXPECT_EQ(read[1].dims, (std::vector<int64_t>{2, 1, 1, 1}));
  EXPECT_EQ(read[1].values, (std::vector<float>{0, -1}));
}

// Three forwards of 2 rows: 6 rows in order, each forward's rows readable before the next.
TEST(HDF5Output, EachForwardAppendsItsRows) {
  SKIP_WITHOUT_HDF5();
  const std::string file = TempDir() + "/out.h5";
  LayerFixture f(LayerText(file), {{2, 3}, {2, 1}}, 0);
  std::vector<float> data, label;
  for (int k = 0; k < 3; ++k) {
    FillBatch(f, k);
    f.Forward();
    const std::vector<float> d = Values(f.bottom(0)), l = Values(f.bottom(1));
    data.insert(data.end(), d.begin(), d.end());
    label.insert(label.end(), l.begin(), l.end());
    const std::vector<Hdf5Dataset> read = ReadHdf5Datasets(file, {"data", "label"});
    EXPECT_EQ(read[0].dims, (std::vector<int64_t>{2 * (k + 1), 3, 1, 1})) << "after forward " << k;
    EXPECT_EQ(read[1].dims, (std::vector<int64_t>{2 * (k + 1), 1, 1, 1})) << "after forward " << k;
    EXPECT_EQ(read[0].values, data) << "after forward " << k;
    EXPECT_EQ(read[1].values, label) << "after forward " << k;
  }
}

// Two forwards of 2 rows, read back by an HDF5Data layer while the writer is still open: batch 4 is
// both forwards' rows, and the next batch wraps around to the same rows.
TEST(HDF5Output, RoundTripThroughHDF5Data) {
  SKIP_WITHOUT_HDF5();
  const std::string dir = TempDir(), file = dir + "/out.h5";
  LayerFixture out(LayerText(file), {{2, 2, 3}, {2}}, 0);
  std::vector<float> data, label;
  for (int k = 0; k < 2; ++k) {
    FillBatch(out, k);
    out.Forward();
    const std::vector<float> d = Values(out.bottom(0)), l = Values(out.bottom(1));
    data.insert(data.end(), d.begin(), d.end());
    label.insert(label.end(), l.begin(), l.end());
  }
  WriteFile(dir + "/list.txt", file + "\n");
  LayerFixture in("name: 'in' type: 'HDF5Data' top: 'data' top: 'label' hdf5_data_param { source: '" + dir +
                      "/list.txt' batch_size: 4 }",
                  {}, 2);
  EXPECT_EQ(in.top(0).shape(), (std::vector<int>{4, 2, 3, 1}));
  EXPECT_EQ(in.top(1).shape(), (std::vector<int>{4, 1, 1, 1}));
  for (int pass = 0; pass < 2; ++pass) {
    in.Forward();
    EXPECT_EQ(Values(in.top(0)), data) << "pass " << pass;
    EXPECT_EQ(Values(in.top(1)), label) << "pass " << pass;
  }
}

// libhdf5 locks a file it has open for writing unless told otherwise; another process must still be
// able to read it between forwards.
TEST(HDF5Output, AnotherProcessCanReadTheOpenFile) {
  SKIP_WITHOUT_HDF5();
  if (RunCommand("command -v h5ls").exit_code != 0) GTEST_SKIP() << "h5ls is not installed (apt install hdf5-tools)";
  const std::string dir = TempDir(), file = dir + "/out.h5";
  LayerFixture f(LayerText(file), {{2, 3}, {2}}, 0);
  for (int k = 0; k < 2; ++k) {
    FillBatch(f, k);
    f.Forward();
  }
  const CommandResult listed = RunCommand("(h5ls " + file + " > " + dir + "/h5ls.txt)");
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  const std::string text = ReadFile(dir + "/h5ls.txt");
  EXPECT_NE(text.find("data"), std::string::npos) << text;
  EXPECT_NE(text.find("{4/Inf, 3, 1, 1}"), std::string::npos) << text;
  EXPECT_NE(text.find("{4/Inf, 1, 1, 1}"), std::string::npos) << text;
}

// An earlier run's HDF5 file is replaced; a file that is not HDF5 (someone's data: the list file of an
// HDF5Data layer, say) is refused and left as it was.
TEST(HDF5Output, SetupReplacesAnEarlierHdf5FileButNoOtherFile) {
  SKIP_WITHOUT_HDF5();
  const std::string file = TempDir() + "/out.h5";
  {
    Hdf5RowWriter earlier(file);
    const float row[2] = {1, 2};
    earlier.Append("old", {1, 2}, row);
  }
  ASSERT_NO_THROW(ReadHdf5Datasets(file, {"old"}));
  LayerFixture f(LayerText(file), {{1, 2}, {1}}, 0);
  EXPECT_NO_THROW(ReadHdf5Datasets(file, {}));  // an HDF5 file, new
  const std::string old = ErrorOf([&] { ReadHdf5Datasets(file, {"old"}); });
  EXPECT_NE(old.find("/old"), std::string::npos) << "the earlier file's dataset is gone: " << old;
  const std::string missing = ErrorOf([&] { ReadHdf5Datasets(file, {"data"}); });
  EXPECT_NE(missing.find("/data"), std::string::npos) << "no forward yet, so no dataset: " << missing;

  const std::string list = TempDir() + "/train_h5.txt";
  WriteFile(list, "data/part1.h5\n");
  const std::string refused = ErrorOf([&] { LayerFixture g(LayerText(list), {{1, 2}, {1}}, 0); });
  EXPECT_NE(refused.find("it exists and is not an HDF5 file, so it is not replaced"), std::string::npos) << refused;
  EXPECT_EQ(ReadFile(list), "data/part1.h5\n");
}

TEST(HDF5Output, RunsInsideANet) {
  SKIP_WITHOUT_HDF5();
  const std::string file = TempDir() + "/out.h5";
  Context ctx(Device::kCPU, 1);
  Net net(ParseNet(R"(
layer { name: "in" type: "Input" top: "x" top: "y" input_param { shape { dim: 3 dim: 2 } shape { dim: 3 } } }
layer { name: "out" type: "HDF5Output" bottom: "x" bottom: "y" hdf5_output_param { file_name: ")" + file + R"(" } }
)"),
          ctx);
  net.AllocateOwnArena();
  for (int k = 0; k < 2; ++k) {
    for (int i = 0; i < 6; ++i) net.blob_by_name("x")->data()[i] = static_cast<float>(10 * k + i);
    for (int i = 0; i < 3; ++i) net.blob_by_name("y")->data()[i] = static_cast<float>(k);
    net.Forward();
  }
  const std::vector<Hdf5Dataset> read = ReadHdf5Datasets(file, {"data", "label"});
  EXPECT_EQ(read[0].dims, (std::vector<int64_t>{6, 2, 1, 1}));
  EXPECT_EQ(read[0].values, (std::vector<float>{0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15}));
  EXPECT_EQ(read[1].values, (std::vector<float>{0, 0, 0, 1, 1, 1}));
}

TEST(HDF5Output, BackwardGivesZeroGradientsAndWritesNothing) {
  SKIP_WITHOUT_HDF5();
  const std::string file = TempDir() + "/out.h5";
  LayerFixture f(LayerText(file), {{2, 3}, {2}}, 0);
  FillBatch(f, 1);
  f.Forward();
  for (Blob* b : f.bottom()) std::fill(b->diff(), b->diff() + b->count(), 5.0f);
  f.layer().Backward(f.top(), {true, false}, f.bottom());
  for (int i = 0; i < 6; ++i) EXPECT_EQ(f.bottom(0).diff()[i], 0.0f) << i;
  for (int i = 0; i < 2; ++i) EXPECT_EQ(f.bottom(1).diff()[i], 5.0f) << "label diff not asked for, left alone";
  EXPECT_EQ(ReadHdf5Datasets(file, {"data"})[0].dims, (std::vector<int64_t>{2, 3, 1, 1}));
}

TEST(HDF5Output, MistakesAreOneLineNamingTheLayer) {
  SKIP_WITHOUT_HDF5();
  const std::string dir = TempDir();
  // A file in a directory that does not exist, and a directory as the file.
  const std::string lost = dir + "/no_such_dir/out.h5";
  ExpectLayerError(ErrorOf([&] { LayerFixture f(LayerText(lost), {{2, 3}, {2}}, 0); }), {lost, "no_such_dir"});
  ExpectLayerError(ErrorOf([&] { LayerFixture f(LayerText(dir), {{2, 3}, {2}}, 0); }), {dir, "directory"});
  ExpectLayerError(ErrorOf([&] { LayerFixture f(LayerText(""), {{2, 3}, {2}}, 0); }), {"file_name"});
  // Two layers writing one file in one process (a train and a test net without phase rules).
  {
    LayerFixture first(LayerText(dir + "/twice.h5"), {{2, 3}, {2}}, 0);
    ExpectLayerError(ErrorOf([&] { LayerFixture second(LayerText(dir + "/twice.h5"), {{2, 3}, {2}}, 0); }),
                     {dir + "/twice.h5", "already open"});
  }
  // Blob counts, and rows that do not pair up.
  ExpectLayerError(ErrorOf([&] { LayerFixture f(LayerText(dir + "/a.h5"), {{2, 3}}, 0); }), {"exactly 2 bottom"});
  ExpectLayerError(ErrorOf([&] { LayerFixture f(LayerText(dir + "/a.h5"), {{2, 3}, {2}}, 1); }), {"exactly 0 top"});
  ExpectLayerError(ErrorOf([&] { LayerFixture f(LayerText(dir + "/a.h5"), {{2, 3}, {3}}, 0); }), {"2 rows", "3"});
  // A row shape that changes after the first forward; the file keeps what was written before.
  const std::string file = dir + "/b.h5";
  LayerFixture f(LayerText(file), {{2, 3}, {2}}, 0);
  FillBatch(f, 0);
  f.Forward();
  Blob data(std::vector<int>{2, 4}), label(std::vector<int>{2});
  MemoryPlan plan;
  plan.RequestBlob(&data, true);
  plan.RequestBlob(&label, true);
  const std::unique_ptr<Arena> arena = plan.Allocate();
  f.layer().Reshape({&data, &label}, {});
  ExpectLayerError(ErrorOf([&] { f.layer().Forward({&data, &label}, {}); }),
                   {"bottom 0 (/data)", "rows of 4", "rows of 3", file});
  const std::vector<Hdf5Dataset> read = ReadHdf5Datasets(file, {"data", "label"});
  EXPECT_EQ(read[0].dims, (std::vector<int64_t>{2, 3, 1, 1}));
  EXPECT_EQ(read[1].dims, (std::vector<int64_t>{2, 1, 1, 1}));
  // More rows of the same shape are fine.
  Blob more(std::vector<int>{3, 3}), more_label(std::vector<int>{3});
  MemoryPlan plan2;
  plan2.RequestBlob(&more, true);
  plan2.RequestBlob(&more_label, true);
  const std::unique_ptr<Arena> arena2 = plan2.Allocate();
  f.layer().Reshape({&more, &more_label}, {});
  f.layer().Forward({&more, &more_label}, {});
  EXPECT_EQ(ReadHdf5Datasets(file, {"data"})[0].dims, (std::vector<int64_t>{5, 3, 1, 1}));
}

TEST(HDF5Output, WithoutHdf5SetupIsAnError) {
  if (HaveHdf5Support()) GTEST_SKIP() << "this build has HDF5";
  ExpectLayerError(ErrorOf([&] { LayerFixture f(LayerText(TempDir() + "/o.h5"), {{2, 3}, {2}}, 0); }),
                   {"no HDF5 support"});
}

}  // namespace cortado::test
