// hdf5_data_test.cpp — HDF5Data on files written by h5py (tests/layers/hdf5_data_files.py): rows in
// order across files of different lengths with wrap-around, float64 and integer datasets converted,
// multi-axis data with 1-D labels, seeded shuffles, and one-line errors naming the layer and the file.
#include <algorithm>
#include <filesystem>
#include <set>
#include <vector>

#include "cortado/error.hpp"
#include "cortado/hdf5.hpp"  // HaveHdf5Support
#include "test_util.hpp"

namespace cortado::test {

namespace {

namespace fs = std::filesystem;

bool HaveH5py() { return RunCommand("/usr/bin/python3 -c 'import h5py'").exit_code == 0; }

#define SKIP_WITHOUT_HDF5_OR_H5PY()                                                           \
  if (!HaveHdf5Support()) GTEST_SKIP() << "this build has no HDF5";                           \
  if (!HaveH5py()) GTEST_SKIP() << "/usr/bin/python3 has no h5py (apt install python3-h5py)"

// Writes .h5 files: args as hdf5_data_files.py takes them ("a.h5 data:f4:3x2:0 label:f4:3:100 ...").
bool WriteH5(const std::string& args) {
  const CommandResult result =
      RunCommand("/usr/bin/python3 " + SourceDir() + "/tests/layers/hdf5_data_files.py " + args);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  return result.exit_code == 0;
}

// A list file naming the given paths, one per line; returns its path.
std::string WriteList(const std::string& dir, const std::vector<std::string>& files) {
  std::string text;
  for (const std::string& file : files) text += file + "\n";
  WriteFile(dir + "/list.txt", text);
  return dir + "/list.txt";
}

std::string LayerText(const std::string& list, int batch_size, bool shuffle = false) {
  return "name: 'd' type: 'HDF5Data' top: 'data' top: 'label' hdf5_data_param { source: '" + list +
         "' batch_size: " + std::to_string(batch_size) + (shuffle ? " shuffle: true" : "") + " }";
}

// The files most tests read: a.h5 has 3 rows, data (2r, 2r+1) and label 100 + r; b.h5 has 2 rows,
// data (10 + 2r, 11 + 2r) and label 200 + r.
bool WriteTwoFiles(const std::string& dir) {
  return WriteH5(dir + "/a.h5 data:f4:3x2:0 label:f4:3:100 " + dir + "/b.h5 data:f4:2x2:10 label:f4:2:200");
}

// Checks that batch row n of the two-file layout is the row whose label is `label`.
void ExpectTwoFileRow(LayerFixture& f, int n, float label) {
  const float base = label < 200 ? 2 * (label - 100) : 10 + 2 * (label - 200);
  EXPECT_EQ(f.top(1).data()[n], label);
  EXPECT_EQ(f.top(0).data()[2 * n], base) << "row of label " << label;
  EXPECT_EQ(f.top(0).data()[2 * n + 1], base + 1) << "row of label " << label;
}

// The labels of `passes` forwards of a shuffled two-file layer (batch_size 5: one pass per forward),
// each pass checked to hold every row once, with data matching labels and each file's rows together.
std::vector<std::vector<float>> ShuffledPasses(const std::string& list, uint32_t seed, int passes) {
  LayerFixture f(LayerText(list, 5, true), {}, 2, seed);
  std::vector<std::vector<float>> orders;
  for (int pass = 0; pass < passes; ++pass) {
    f.Forward();
    std::vector<float> labels(f.top(1).data(), f.top(1).data() + 5);
    for (int n = 0; n < 5; ++n) ExpectTwoFileRow(f, n, labels[n]);
    std::vector<float> sorted = labels;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, (std::vector<float>{100, 101, 102, 200, 201})) << "pass " << pass;
    const auto from_a = [](float label) { return label < 200; };
    EXPECT_TRUE(std::is_partitioned(labels.begin(), labels.end(), from_a) ||
                std::is_partitioned(labels.begin(), labels.end(), [&](float l) { return !from_a(l); }))
        << "pass " << pass << ": files interleaved";
    orders.push_back(labels);
  }
  return orders;
}

// Checks that `message` is one line naming the layer and holding every one of `parts`.
void ExpectLayerError(const std::string& message, const std::vector<std::string>& parts) {
  EXPECT_NE(message.find("layer d (HDF5Data)"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  for (const std::string& part : parts) EXPECT_NE(message.find(part), std::string::npos) << message;
}

std::string SetUpError(const std::string& text) {
  return ErrorOf([&] { LayerFixture f(text, {}, 2); });
}

}  // namespace

TEST(HDF5Data, RowsInOrderAcrossFilesThenWrapAround) {
  SKIP_WITHOUT_HDF5_OR_H5PY();
  const std::string dir = TempDir();
  ASSERT_TRUE(WriteTwoFiles(dir));
  // Blank and blank-looking lines are skipped; CR LF line ends and surrounding spaces are not part of a path.
  WriteFile(dir + "/list.txt", dir + "/a.h5\r\n\r\n   \n  " + dir + "/b.h5  \n");
  LayerFixture f(LayerText(dir + "/list.txt", 2), {}, 2);
  EXPECT_EQ(f.top(0).shape(), (std::vector<int>{2, 2}));
  EXPECT_EQ(f.top(1).shape(), (std::vector<int>{2}));
  // Two passes over a0 a1 a2 b0 b1, two rows per batch.
  const std::vector<std::vector<float>> batches = {{100, 101}, {102, 200}, {201, 100}, {101, 102}, {200, 201}};
  for (size_t b = 0; b < batches.size(); ++b) {
    SCOPED_TRACE("batch " + std::to_string(b));
    f.Forward();
    for (int n = 0; n < 2; ++n) ExpectTwoFileRow(f, n, batches[b][n]);
  }
}

TEST(HDF5Data, RelativePathsAreFromTheWorkingDirectory) {
  SKIP_WITHOUT_HDF5_OR_H5PY();
  const std::string dir = TempDir();
  ASSERT_TRUE(WriteTwoFiles(dir));
  const std::string relative = fs::relative(dir + "/b.h5", fs::current_path()).string();
  ASSERT_FALSE(relative.empty());
  ASSERT_NE(relative[0], '/');
  LayerFixture f(LayerText(WriteList(dir, {relative}), 2), {}, 2);
  f.Forward();
  ExpectTwoFileRow(f, 0, 200);
  ExpectTwoFileRow(f, 1, 201);
}

TEST(HDF5Data, Float64AndIntegerDatasetsConvertToFloat) {
  SKIP_WITHOUT_HDF5_OR_H5PY();
  const std::string dir = TempDir();
  // data[i] = 0.1 + 0.1 i in float64 (none exactly representable as float); label = -1, 0, 1 as int32.
  ASSERT_TRUE(WriteH5(dir + "/a.h5 data:f8:3x2:0.1:0.1 label:i4:3:-1"));
  LayerFixture f(LayerText(WriteList(dir, {dir + "/a.h5"}), 3), {}, 2);
  ASSERT_EQ(f.top(0).shape(), (std::vector<int>{3, 2}));
  f.Forward();
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(f.top(0).data()[i], static_cast<float>(0.1 + 0.1 * i)) << i;
  for (int n = 0; n < 3; ++n) EXPECT_EQ(f.top(1).data()[n], n - 1.0f);
}

TEST(HDF5Data, MultiAxisDataWithOneDimensionalLabels) {
  SKIP_WITHOUT_HDF5_OR_H5PY();
  const std::string dir = TempDir();
  // 4 rows of 2×3×2 = 12 values: row r holds 12r .. 12r + 11; label 50 + r.
  ASSERT_TRUE(WriteH5(dir + "/a.h5 data:f4:4x2x3x2:0 label:f4:4:50"));
  LayerFixture f(LayerText(WriteList(dir, {dir + "/a.h5"}), 3), {}, 2);
  EXPECT_EQ(f.top(0).shape(), (std::vector<int>{3, 2, 3, 2}));
  EXPECT_EQ(f.top(1).shape(), (std::vector<int>{3}));
  const std::vector<std::vector<int>> batches = {{0, 1, 2}, {3, 0, 1}, {2, 3, 0}};
  for (size_t b = 0; b < batches.size(); ++b) {
    f.Forward();
    for (int n = 0; n < 3; ++n) {
      const int row = batches[b][n];
      EXPECT_EQ(f.top(1).data()[n], 50.0f + row) << "batch " << b << " row " << n;
      for (int k = 0; k < 12; ++k)
        ASSERT_EQ(f.top(0).data()[n * 12 + k], 12.0f * row + k) << "batch " << b << " row " << n << " value " << k;
    }
  }
}

TEST(HDF5Data, ShuffleGivesEveryRowOncePerPassAndRepeatsWithTheSeed) {
  SKIP_WITHOUT_HDF5_OR_H5PY();
  const std::string dir = TempDir();
  ASSERT_TRUE(WriteTwoFiles(dir));
  const std::string list = WriteList(dir, {dir + "/a.h5", dir + "/b.h5"});
  const auto first = ShuffledPasses(list, 1701, 20);
  EXPECT_EQ(ShuffledPasses(list, 1701, 20), first);
  EXPECT_NE(ShuffledPasses(list, 7, 20), first);
  // 24 possible orders (2 file orders × 3! × 2!): 20 passes in one order would mean no shuffle.
  EXPECT_GT(std::set<std::vector<float>>(first.begin(), first.end()).size(), 1u);
}

TEST(HDF5Data, ShuffleOfOneFileReordersItsRowsEachPass) {
  SKIP_WITHOUT_HDF5_OR_H5PY();
  const std::string dir = TempDir();
  ASSERT_TRUE(WriteH5(dir + "/a.h5 data:f4:6:0 label:f4:6:0"));
  LayerFixture f(LayerText(WriteList(dir, {dir + "/a.h5"}), 3, true), {}, 2);
  std::set<std::vector<float>> orders;
  for (int pass = 0; pass < 10; ++pass) {
    std::vector<float> rows;
    for (int half = 0; half < 2; ++half) {
      f.Forward();
      rows.insert(rows.end(), f.top(0).data(), f.top(0).data() + 3);
      EXPECT_TRUE(std::equal(rows.end() - 3, rows.end(), f.top(1).data()));
    }
    orders.insert(rows);
    std::sort(rows.begin(), rows.end());
    EXPECT_EQ(rows, (std::vector<float>{0, 1, 2, 3, 4, 5})) << "pass " << pass;
  }
  EXPECT_GT(orders.size(), 1u);
}

TEST(HDF5Data, ListErrorsNameTheLayerAndTheFile) {
  SKIP_WITHOUT_HDF5_OR_H5PY();
  const std::string dir = TempDir();
  ASSERT_TRUE(WriteTwoFiles(dir));
  ExpectLayerError(SetUpError(LayerText(dir + "/no_list.txt", 2)), {"no_list.txt"});
  WriteFile(dir + "/empty.txt", "\n  \n");
  ExpectLayerError(SetUpError(LayerText(dir + "/empty.txt", 2)), {"empty.txt", "no HDF5 files"});
  ExpectLayerError(SetUpError(LayerText(WriteList(dir, {dir + "/a.h5", dir + "/missing.h5"}), 2)),
                   {"missing.h5", "no such file"});
  WriteFile(dir + "/text.h5", "not HDF5\n");
  ExpectLayerError(SetUpError(LayerText(WriteList(dir, {dir + "/text.h5"}), 2)), {"text.h5", "not an HDF5 file"});
}

TEST(HDF5Data, DatasetErrorsNameTheLayerAndTheFile) {
  SKIP_WITHOUT_HDF5_OR_H5PY();
  const std::string dir = TempDir();
  ASSERT_TRUE(WriteH5(dir + "/nolabel.h5 data:f4:3x2:0 " + dir + "/rows.h5 data:f4:3x2:0 label:f4:4:0"));
  ExpectLayerError(SetUpError(LayerText(WriteList(dir, {dir + "/nolabel.h5"}), 2)), {"nolabel.h5", "/label"});
  ExpectLayerError(SetUpError(LayerText(WriteList(dir, {dir + "/rows.h5"}), 2)),
                   {"rows.h5", "/label has 4 rows", "/data has 3"});
}

// A dataset of 2^31 rows of nothing holds no values and would still have sized the row order (16 GiB):
// every per-row axis must be positive, so rows never outnumber the values present.
TEST(HDF5Data, RowsOfNoValuesAreAnError) {
  SKIP_WITHOUT_HDF5_OR_H5PY();
  const std::string dir = TempDir();
  ASSERT_TRUE(WriteH5(dir + "/empty_rows.h5 data:f4:2147483648x0:0 label:f4:2147483648x0:0"));
  EXPECT_EQ(SetUpError(LayerText(WriteList(dir, {dir + "/empty_rows.h5"}), 2)),
            "layer d (HDF5Data): '" + dir + "/empty_rows.h5': /data has 2147483648 rows of shape 0; every axis "
            "must be positive");
}

TEST(HDF5Data, LaterFileWithAnotherRowShapeIsAnError) {
  SKIP_WITHOUT_HDF5_OR_H5PY();
  const std::string dir = TempDir();
  ASSERT_TRUE(WriteH5(dir + "/a.h5 data:f4:3x2:0 label:f4:3:0 " + dir + "/b.h5 data:f4:2x3:0 label:f4:2:0"));
  LayerFixture f(LayerText(WriteList(dir, {dir + "/a.h5", dir + "/b.h5"}), 2), {}, 2);
  f.Forward();  // a0 a1
  ExpectLayerError(ErrorOf([&] { f.Forward(); }), {"b.h5", "/data", "rows of shape 3", "a.h5"});  // a2, then b
}

TEST(HDF5Data, BadParametersAreErrors) {
  SKIP_WITHOUT_HDF5_OR_H5PY();
  const std::string dir = TempDir();
  ASSERT_TRUE(WriteTwoFiles(dir));
  const std::string list = WriteList(dir, {dir + "/a.h5"});
  ExpectLayerError(SetUpError(LayerText(list, 0)), {"batch_size"});
  ExpectLayerError(SetUpError("name: 'd' type: 'HDF5Data' top: 'data' top: 'label' hdf5_data_param { source: '" +
                              list + "' }"),
                   {"batch_size"});
  ExpectLayerError(SetUpError("name: 'd' type: 'HDF5Data' top: 'data' top: 'label' hdf5_data_param { batch_size: 1 }"),
                   {"source"});
}

TEST(HDF5Data, WithoutHdf5SetupIsAnError) {
  if (HaveHdf5Support()) GTEST_SKIP() << "this build has HDF5";
  ExpectLayerError(SetUpError(LayerText("list.txt", 2)), {"no HDF5 support"});
}

}  // namespace cortado::test

namespace cortado::test {

// A layer restored to another's reader state hands out the same batches from there on: shuffled,
// across both files and several passes (batch 3 over 5 rows, so batches straddle files and passes),
// even when its own context drew another seed.
TEST(HDF5Data, RestoredReaderStateContinuesExactly) {
  SKIP_WITHOUT_HDF5_OR_H5PY();
  const std::string dir = TempDir();
  ASSERT_TRUE(WriteTwoFiles(dir));
  const std::string text = LayerText(WriteList(dir, {dir + "/a.h5", dir + "/b.h5"}), 3, true);
  for (int done : {0, 1, 4, 7}) {
    SCOPED_TRACE("resumed after " + std::to_string(done) + " batches");
    LayerFixture straight(text, {}, 2, 21);
    for (int b = 0; b < done; ++b) straight.Forward();
    const Layer::ReaderState state = straight.layer().reader_state();
    EXPECT_EQ(state.position, 3u * done);
    LayerFixture resumed(text, {}, 2, 99);
    resumed.layer().RestoreReaderState(state);
    for (int b = 0; b < 6; ++b) {
      straight.Forward();
      resumed.Forward();
      ASSERT_EQ(std::vector<float>(resumed.top(1).data(), resumed.top(1).data() + 3),
                std::vector<float>(straight.top(1).data(), straight.top(1).data() + 3)) << "batch " << b;
      ASSERT_EQ(std::vector<float>(resumed.top(0).data(), resumed.top(0).data() + 6),
                std::vector<float>(straight.top(0).data(), straight.top(0).data() + 6)) << "batch " << b;
    }
  }
}

}  // namespace cortado::test

namespace cortado::test {

// Data-parallel ranks (Context::SetDataParallelRank): rank r of 2 with batch 2 reads rows [2r, 2r + 2)
// of each batch of 4 that one layer reads, shuffled files and rows included, and counts every rank's rows.
TEST(HDF5Data, RanksTakeTheirBlockOfEachBatch) {
  SKIP_WITHOUT_HDF5_OR_H5PY();
  const std::string dir = TempDir();
  ASSERT_TRUE(WriteTwoFiles(dir));
  const std::string list = dir + "/list.txt";
  WriteList(dir, {dir + "/a.h5", dir + "/b.h5"});
  for (bool shuffle : {false, true}) {
    LayerFixture one(LayerText(list, 4, shuffle), {}, 2, 77);
    std::vector<std::unique_ptr<LayerFixture>> ranks;
    for (int r = 0; r < 2; ++r) {
      ranks.push_back(std::make_unique<LayerFixture>(LayerText(list, 2, shuffle), std::vector<std::vector<int>>{}, 2, 77));
      ranks.back()->ctx().SetDataParallelRank(r, 2);
    }
    for (int batch = 0; batch < 6; ++batch) {
      one.Forward();
      for (int r = 0; r < 2; ++r) {
        ranks[r]->Forward();
        for (int n = 0; n < 2; ++n)
          EXPECT_EQ(ranks[r]->top(1).data()[n], one.top(1).data()[2 * r + n]) << shuffle << " batch " << batch;
        EXPECT_EQ(ranks[r]->layer().reader_state().position, one.layer().reader_state().position);
      }
    }
  }
}

}  // namespace cortado::test
