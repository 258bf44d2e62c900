// convert_mnist_siamese_data_test.cpp — the built tool on small generated IDX files: one pair Datum per
// image (2×rows×cols: channel 0 image i, channel 1 image j, each drawn as rng() % N from a std::mt19937
// seeded with --seed, i first), label 1 exactly when the two digits are equal, keys "%08d"; LevelDB by
// default, LMDB on request; the same seed repeats the database; bad inputs are one line and exit 1.
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "cortado/data/records.hpp"
#include "test_util.hpp"

namespace cortado::test {

namespace {

const int kCount = 60, kRows = 3, kCols = 4, kPixels = kRows * kCols;

void PutWord(std::string* out, uint32_t v) {
  for (int shift : {24, 16, 8, 0}) out->push_back(static_cast<char>((v >> shift) & 0xff));
}

// Image i: pixel 0 = i, pixel j = (31·i + j) % 256; label (i·7) % 10. Every image is distinct.
std::string Image(int i) {
  std::string pixels(kPixels, '\0');
  pixels[0] = static_cast<char>(i);
  for (int j = 1; j < kPixels; ++j) pixels[j] = static_cast<char>((31 * i + j) % 256);
  return pixels;
}
int Label(int i) { return (i * 7) % 10; }

void WriteIdx(const std::string& dir, uint32_t image_magic = 2051) {
  std::string images, labels;
  PutWord(&images, image_magic), PutWord(&images, kCount), PutWord(&images, kRows), PutWord(&images, kCols);
  PutWord(&labels, 2049), PutWord(&labels, kCount);
  for (int i = 0; i < kCount; ++i) {
    images += Image(i);
    labels.push_back(static_cast<char>(Label(i)));
  }
  WriteFile(dir + "/images", images);
  WriteFile(dir + "/labels", labels);
}

CommandResult Convert(const std::string& dir, const std::string& flags, const std::string& db) {
  return RunCommand(ToolPath("convert_mnist_siamese_data") + " " + flags + " " + dir + "/images " + dir +
                    "/labels " + dir + "/" + db);
}

// Checks every record of `db` against the pairs drawn with `seed`; returns the records' bytes.
std::vector<std::string> ExpectPairs(const std::string& path, DataParameter::DB backend, uint32_t seed) {
  const auto records = OpenRecords(backend, path, "test");
  EXPECT_EQ(records->size(), uint64_t(kCount));
  std::mt19937 rng(seed);
  std::vector<std::string> values;
  int similar = 0;
  for (int item = 0; item < kCount && item < static_cast<int>(records->size()); ++item) {
    const int i = static_cast<int>(rng() % kCount);
    const int j = static_cast<int>(rng() % kCount);
    char key[16];
    std::snprintf(key, sizeof(key), "%08d", item);
    EXPECT_EQ(records->key(item), key);
    values.emplace_back(records->value(item));
    Datum d;
    EXPECT_TRUE(d.ParseFromString(values.back())) << key;
    EXPECT_EQ(d.channels(), 2) << key;
    EXPECT_EQ(d.height(), kRows) << key;
    EXPECT_EQ(d.width(), kCols) << key;
    EXPECT_FALSE(d.encoded()) << key;
    EXPECT_TRUE(d.data() == Image(i) + Image(j)) << key << ": expected images " << i << " and " << j;
    EXPECT_EQ(d.label(), Label(i) == Label(j) ? 1 : 0) << key;
    similar += d.label();
  }
  EXPECT_GT(similar, 0);  // about a tenth of the pairs share a digit
  EXPECT_LT(similar, kCount / 2);
  return values;
}

}  // namespace

TEST(ConvertMnistSiameseData, PairsOfRandomImagesLabelledBySameDigit) {
  const std::string dir = TempDir();
  WriteIdx(dir);
  const CommandResult r = Convert(dir, "", "pairs");  // Caffe's positional arguments, LevelDB by default
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("A total of 60 items."), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Rows: 3 Cols: 4"), std::string::npos) << r.err;
  EXPECT_TRUE(std::filesystem::exists(dir + "/pairs/CURRENT"));
  const auto first = ExpectPairs(dir + "/pairs", DataParameter::LEVELDB, 1);

  ASSERT_EQ(Convert(dir, "--seed=1 --backend=lmdb", "pairs_lmdb").exit_code, 0);
  EXPECT_EQ(ExpectPairs(dir + "/pairs_lmdb", DataParameter::LMDB, 1), first);  // same seed, same pairs

  ASSERT_EQ(Convert(dir, "--seed=9", "pairs9").exit_code, 0);
  EXPECT_NE(ExpectPairs(dir + "/pairs9", DataParameter::LEVELDB, 9), first);
}

TEST(ConvertMnistSiameseData, BadInputsAreOneLine) {
  const std::string dir = TempDir();
  WriteIdx(dir, /*image_magic=*/2049);
  CommandResult r = Convert(dir, "", "db");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(CountLines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("'" + dir + "/images' is not an IDX image file: magic number 2049"), std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir + "/db"));

  WriteIdx(dir);
  ASSERT_EQ(Convert(dir, "", "db").exit_code, 0);
  r = Convert(dir, "", "db");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(CountLines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("'" + dir + "/db' already exists"), std::string::npos) << r.err;

  r = Convert(dir, "--backend=rocksdb", "db2");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("unknown --backend=rocksdb"), std::string::npos) << r.err;

  r = RunCommand(ToolPath("convert_mnist_siamese_data") + " " + dir + "/images " + dir + "/labels");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("Usage: convert_mnist_siamese_data"), std::string::npos) << r.err;
}

}  // namespace cortado::test
