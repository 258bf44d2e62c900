// convert_mnist_data_test.cpp — runs the built tool on tiny IDX files and reads the LMDB or LevelDB
// back (a Data layer gives the same batches from both, resumed exactly); bad inputs end with exit
// code 1 and one line on stderr.
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cortado/data/lmdb.hpp"
#include "cortado/data/records.hpp"
#include "test_util.hpp"

namespace cortado::test {

namespace {

const std::string kTool = CORTADO_BINARY_DIR "/tools/convert_mnist_data";

void PutWord(std::string* out, uint32_t v) {
  for (int shift : {24, 16, 8, 0}) out->push_back(static_cast<char>((v >> shift) & 0xff));
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// images: count×rows×cols with pixel j of image i = 10·i + j; labels 7, 0, 9, ...
void WriteIdx(const std::string& dir, uint32_t count, uint32_t rows, uint32_t cols,
              uint32_t image_magic = 2051, uint32_t label_magic = 2049, uint32_t label_count = 0) {
  std::string images, labels;
  PutWord(&images, image_magic), PutWord(&images, count), PutWord(&images, rows), PutWord(&images, cols);
  for (uint32_t i = 0; i < count; ++i)
    for (uint32_t j = 0; j < rows * cols; ++j) images.push_back(static_cast<char>(10 * i + j));
  label_count = label_count ? label_count : count;
  PutWord(&labels, label_magic), PutWord(&labels, label_count);
  for (uint32_t i = 0; i < label_count; ++i) labels.push_back(static_cast<char>((7 + 3 * i) % 10));
  WriteFile(dir + "/images", images);
  WriteFile(dir + "/labels", labels);
}

struct Result {
  int exit_code;
  std::string err;
};

Result RunTool(const std::string& dir, const std::string& args) {
  const std::string err_path = dir + "/stderr.txt";
  const int status = std::system((kTool + " " + args + " 2>" + err_path).c_str());
  std::stringstream err;
  err << std::ifstream(err_path).rdbuf();
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, err.str()};
}

int Lines(const std::string& text) {
  int n = 0;
  for (char ch : text) n += ch == '\n';
  return n;
}

}  // namespace

TEST(ConvertMnistData, WritesOneDatumPerImage) {
  const std::string dir = TempDir();
  WriteIdx(dir, 3, 2, 3);
  const Result r = RunTool(dir, dir + "/images " + dir + "/labels " + dir + "/db");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("A total of 3 items."), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Rows: 2 Cols: 3"), std::string::npos) << r.err;

  LmdbRecords records(dir + "/db", "test");
  ASSERT_EQ(records.size(), 3u);
  const char* keys[] = {"00000000", "00000001", "00000002"};
  const int labels[] = {7, 0, 3};
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(records.key(i), keys[i]);
    Datum d;
    ASSERT_TRUE(d.ParseFromArray(records.value(i).data(), static_cast<int>(records.value(i).size())));
    EXPECT_EQ(d.channels(), 1);
    EXPECT_EQ(d.height(), 2);
    EXPECT_EQ(d.width(), 3);
    EXPECT_EQ(d.label(), labels[i]);
    EXPECT_FALSE(d.encoded());
    ASSERT_EQ(d.data().size(), 6u);
    for (int j = 0; j < 6; ++j) EXPECT_EQ(static_cast<uint8_t>(d.data()[j]), 10 * i + j);
  }
}

TEST(ConvertMnistData, BadMagicNamesTheFile) {
  const std::string dir = TempDir();
  WriteIdx(dir, 2, 2, 2, /*image_magic=*/2049);
  const Result r = RunTool(dir, dir + "/images " + dir + "/labels " + dir + "/db");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(dir + "/images"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("2049"), std::string::npos) << r.err;

  WriteIdx(dir, 2, 2, 2, 2051, /*label_magic=*/2051);
  const Result labels = RunTool(dir, dir + "/images " + dir + "/labels " + dir + "/db");
  EXPECT_EQ(labels.exit_code, 1);
  EXPECT_EQ(Lines(labels.err), 1) << labels.err;
  EXPECT_NE(labels.err.find(dir + "/labels"), std::string::npos) << labels.err;
}

TEST(ConvertMnistData, CountsMustMatch) {
  const std::string dir = TempDir();
  WriteIdx(dir, 3, 2, 2, 2051, 2049, /*label_count=*/2);
  const Result r = RunTool(dir, dir + "/images " + dir + "/labels " + dir + "/db");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("holds 3 images"), std::string::npos) << r.err;
}

TEST(ConvertMnistData, NeverOverwritesAndKnowsItsBackends) {
  const std::string dir = TempDir();
  WriteIdx(dir, 1, 1, 1);
  for (const std::string backend : {"", "--backend=leveldb "}) {
    ASSERT_EQ(RunTool(dir, backend + dir + "/images " + dir + "/labels " + dir + "/db").exit_code, 0);
    const Result again = RunTool(dir, backend + dir + "/images " + dir + "/labels " + dir + "/db");
    EXPECT_EQ(again.exit_code, 1);
    EXPECT_EQ(Lines(again.err), 1) << again.err;
    EXPECT_NE(again.err.find("'" + dir + "/db' already exists"), std::string::npos) << again.err;
    std::filesystem::remove_all(dir + "/db");
  }
  const Result unknown = RunTool(dir, "--backend=rocksdb " + dir + "/images " + dir + "/labels " + dir + "/db");
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.err.find("unknown --backend=rocksdb; use --backend=lmdb or --backend=leveldb"),
            std::string::npos)
      << unknown.err;
  EXPECT_FALSE(std::filesystem::exists(dir + "/db"));
}

// The same IDX files through --backend=lmdb and --backend=leveldb: the LevelDB holds the same records,
// and a Data layer (random crops, mirrors, rand_skip, several threads, shuffled) gives the same batches
// from both, also after an exact resume from a reader state.
TEST(ConvertMnistData, LeveldbEqualsLmdbBatchForBatch) {
  const std::string dir = TempDir();
  WriteIdx(dir, 13, 4, 5);
  for (const std::string backend : {"lmdb", "leveldb"}) {
    const Result r = RunTool(dir, "--backend=" + backend + " " + dir + "/images " + dir + "/labels " + dir +
                                      "/" + backend);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  const auto lmdb = OpenRecords(DataParameter::LMDB, dir + "/lmdb", "test");
  const auto leveldb = OpenRecords(DataParameter::LEVELDB, dir + "/leveldb", "test");
  ASSERT_EQ(leveldb->size(), 13u);
  for (uint64_t i = 0; i < 13; ++i) {
    EXPECT_EQ(leveldb->key(i), lmdb->key(i));
    EXPECT_EQ(std::string(leveldb->value(i)), std::string(lmdb->value(i)));
  }

  auto layer = [&](const std::string& source, const char* backend, uint32_t seed) {
    return std::make_unique<LayerFixture>(
        "name: 'mnist' type: 'Data' data_param { source: '" + source + "' " + backend +
            " batch_size: 5 rand_skip: 6 threads: 3 shuffle: true } "
            "transform_param { scale: 0.00390625 crop_size: 3 mirror: true }",
        std::vector<std::vector<int>>{}, 2, seed);
  };
  auto batch = [](LayerFixture& f) {
    f.Forward();
    std::vector<float> out(f.top(0).data(), f.top(0).data() + f.top(0).count());
    out.insert(out.end(), f.top(1).data(), f.top(1).data() + f.top(1).count());
    return out;
  };
  auto from_lmdb = layer(dir + "/lmdb", "backend: LMDB", 3);
  auto from_leveldb = layer(dir + "/leveldb", "", 3);  // no backend: Caffe's default, LEVELDB
  std::vector<std::vector<float>> expected;
  for (int step = 0; step < 7; ++step) {  // 35 records: past two epochs of 13
    expected.push_back(batch(*from_lmdb));
    ASSERT_EQ(batch(*from_leveldb), expected.back()) << "step " << step;
  }
  auto stopped = layer(dir + "/leveldb", "backend: LEVELDB", 3);
  for (int step = 0; step < 4; ++step) batch(*stopped);
  const Layer::ReaderState state = stopped->layer().reader_state();
  stopped.reset();
  auto resumed = layer(dir + "/leveldb", "backend: LEVELDB", 42);
  resumed->layer().RestoreReaderState(state);
  for (int step = 4; step < 7; ++step) ASSERT_EQ(batch(*resumed), expected[step]) << "step " << step;
}

}  // namespace cortado::test
