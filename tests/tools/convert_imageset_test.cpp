// convert_imageset_test.cpp — the built convert_imageset and compute_image_mean, run end to end on
// synthetic images made by tests/tools/image_reference.py, which also writes what OpenCV's Python
// reader and numpy see in them: pixels, resized pixels and the mean image to compare against.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cortado/cortado.pb.h"
#include "cortado/data/lmdb.hpp"
#include "cortado/data/records.hpp"
#include "cortado/image.hpp"
#include "cortado/io.hpp"
#include "test_util.hpp"

namespace cortado::test {

namespace {

namespace fs = std::filesystem;

bool Has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

bool HaveCv2() { return RunCommand("/usr/bin/python3 -c 'import cv2, numpy'").exit_code == 0; }

#define SKIP_WITHOUT_IMAGES()                                                                   \
  if (!BuiltWithImageSupport()) GTEST_SKIP() << "this build has no OpenCV";                     \
  if (!HaveCv2()) GTEST_SKIP() << "/usr/bin/python3 has no cv2 (apt install python3-opencv)"

// The list written by image_reference.py: line i (from 0) is kPaths[i] with label kLabels[i];
// line 1 (bad.png) is not an image.
const char* const kPaths[] = {"a.png", "bad.png", "dir with space/b c.jpg", "sub/gray.png"};
const int kLabels[] = {3, 1, 0, 7};
const int kReadable[] = {0, 2, 3};

// A fresh directory with the images, list.txt and the references.
std::string MakeImages() {
  const std::string dir = TempDir();
  const std::string helper = SourceDir() + "/tests/tools/image_reference.py";
  const CommandResult r = RunCommand("/usr/bin/python3 " + helper + " " + dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return dir;
}

// What OpenCV's Python reader gives for image i: shape C, H, W and uint8 pixels C×H×W.
struct Ref {
  int channels = 0, height = 0, width = 0;
  std::string pixels;
};
Ref LoadRef(const std::string& dir, int i, const std::string& variant) {
  const std::string base = dir + "/ref/" + std::to_string(i) + "_" + variant;
  Ref ref;
  std::ifstream(base + ".txt") >> ref.channels >> ref.height >> ref.width;
  ref.pixels = ReadFile(base + ".bin");
  return ref;
}

CommandResult RunTool(const std::string& tool, const std::string& args) {
  return RunCommand(ToolPath(tool) + " " + args);
}

// convert_imageset FLAGS DIR/images/ DIR/LIST DIR/DB
CommandResult Convert(const std::string& dir, const std::string& flags, const std::string& db,
                      const std::string& list = "list.txt") {
  return RunTool("convert_imageset",
                 flags + " " + dir + "/images/ " + dir + "/" + list + " " + dir + "/" + db);
}

std::vector<std::pair<std::string, Datum>> ReadDb(const std::string& path,
                                                  DataParameter::DB backend = DataParameter::LMDB) {
  std::vector<std::pair<std::string, Datum>> records;
  const auto db = OpenRecords(backend, path, "test");
  for (uint64_t i = 0; i < db->size(); ++i) {
    const std::string_view value = db->value(i);
    Datum d;
    EXPECT_TRUE(d.ParseFromArray(value.data(), static_cast<int>(value.size())));
    records.emplace_back(std::string(db->key(i)), d);
  }
  return records;
}

std::string Key(int index, const std::string& path) {
  char prefix[16];
  std::snprintf(prefix, sizeof(prefix), "%08d_", index);
  return prefix + path;
}

void ExpectPixels(const Datum& d, const Ref& ref, const std::string& what) {
  EXPECT_EQ(d.channels(), ref.channels) << what;
  EXPECT_EQ(d.height(), ref.height) << what;
  EXPECT_EQ(d.width(), ref.width) << what;
  EXPECT_TRUE(d.data() == ref.pixels) << what << ": pixels differ from OpenCV's";
}

// The readable images, converted with `flags`: keys, labels and pixels against the `variant` reference
// (encoded records decoded first).
void ExpectConverted(const std::string& dir, const std::string& db, const std::string& variant,
                     DataParameter::DB backend = DataParameter::LMDB) {
  const auto records = ReadDb(dir + "/" + db, backend);
  ASSERT_EQ(records.size(), 3u);
  for (size_t r = 0; r < records.size(); ++r) {
    const int i = kReadable[r];
    const auto& [key, datum] = records[r];
    EXPECT_EQ(key, Key(i, kPaths[i]));
    EXPECT_EQ(datum.label(), kLabels[i]) << key;
    Datum decoded = datum;
    if (datum.encoded()) DecodeDatum(datum, ColorMode::kKeep, &decoded);
    ExpectPixels(decoded, LoadRef(dir, i, variant), key);
  }
}

// The tool failed as a user's mistake: exit 1, the last stderr line "<tool>: error: ...".
std::string ErrorLine(const CommandResult& r, const std::string& tool) {
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_FALSE(Has(r.err, "Check failed") || Has(r.err, "*** ") || Has(r.err, "terminate called")) << r.err;
  const std::string last = LastLine(r.err);
  EXPECT_EQ(last.rfind(tool + ": error: ", 0), 0u) << r.err;
  return last;
}

}  // namespace

// ---- convert_imageset ----------------------------------------------------------------------------

TEST(ConvertImageset, RawColourPixelsMatchOpenCV) {
  SKIP_WITHOUT_IMAGES();
  const std::string dir = MakeImages();
  const CommandResult r = Convert(dir, "", "db");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.err, "A total of 4 images.")) << r.err;
  EXPECT_TRUE(Has(r.err, "Processed 3 files.")) << r.err;
  EXPECT_TRUE(Has(r.err, "list.txt:2: skipping: cannot read image '" + dir + "/images/bad.png'")) << r.err;
  EXPECT_TRUE(Has(r.err, "Skipped 1 of 4 images")) << r.err;
  ExpectConverted(dir, "db", "color");  // the grey PNG too, as 3 channels
  for (const auto& [key, datum] : ReadDb(dir + "/db")) EXPECT_FALSE(datum.encoded()) << key;
}

// --backend=leveldb writes the same records into a LevelDB, raw or encoded.
TEST(ConvertImageset, LeveldbBackend) {
  SKIP_WITHOUT_IMAGES();
  const std::string dir = MakeImages();
  for (const std::string flags : {"", "--encoded"}) {
    const std::string db = flags.empty() ? "raw" : "encoded";
    ASSERT_EQ(Convert(dir, flags, db + "_lmdb").exit_code, 0);
    const CommandResult r = Convert(dir, "--backend=leveldb " + flags, db + "_leveldb");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(fs::exists(dir + "/" + db + "_leveldb/CURRENT"));
    ExpectConverted(dir, db + "_leveldb", "color", DataParameter::LEVELDB);
    const auto lmdb = ReadDb(dir + "/" + db + "_lmdb");
    const auto leveldb = ReadDb(dir + "/" + db + "_leveldb", DataParameter::LEVELDB);
    ASSERT_EQ(leveldb.size(), lmdb.size());
    for (size_t i = 0; i < lmdb.size(); ++i) {
      EXPECT_EQ(leveldb[i].first, lmdb[i].first);
      EXPECT_EQ(leveldb[i].second.SerializeAsString(), lmdb[i].second.SerializeAsString()) << lmdb[i].first;
    }
  }
  // A failed conversion leaves no LevelDB behind either.
  const std::string line = ErrorLine(Convert(dir, "--backend=leveldb --check_size", "sized"), "convert_imageset");
  EXPECT_TRUE(Has(line, "--check_size")) << line;
  EXPECT_FALSE(fs::exists(dir + "/sized"));
}

TEST(ConvertImageset, GrayReadsOneChannel) {
  SKIP_WITHOUT_IMAGES();
  const std::string dir = MakeImages();
  const CommandResult r = Convert(dir, "--gray", "db");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectConverted(dir, "db", "gray");
}

TEST(ConvertImageset, ResizeMatchesCv2ResizeLinear) {
  SKIP_WITHOUT_IMAGES();
  const std::string dir = MakeImages();
  const CommandResult r = Convert(dir, "--resize_width=6 --resize_height=5 --check_size", "db");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectConverted(dir, "db", "resized");  // every record 3×5×6
}

TEST(ConvertImageset, EncodedKeepsTheFileBytes) {
  SKIP_WITHOUT_IMAGES();
  const std::string dir = MakeImages();
  const CommandResult r = Convert(dir, "--encoded", "db");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto records = ReadDb(dir + "/db");
  ASSERT_EQ(records.size(), 3u);
  for (int k : {0, 1}) {  // colour PNG and JPEG: the files' own bytes
    const int i = kReadable[k];
    const Datum& d = records[k].second;
    EXPECT_TRUE(d.encoded());
    EXPECT_TRUE(d.data() == ReadFile(dir + "/images/" + kPaths[i])) << kPaths[i];
    const Ref ref = LoadRef(dir, i, "color");
    EXPECT_EQ(d.channels(), ref.channels);
    EXPECT_EQ(d.height(), ref.height);
    EXPECT_EQ(d.width(), ref.width);
  }
  // A grey PNG read as colour is re-encoded with 3 channels, so that every record decodes alike.
  ExpectConverted(dir, "db", "color");

  // Re-encoded (lossless PNG) after resizing: decodes to cv2.resize's pixels.
  const CommandResult png = Convert(dir, "--encode_type=png --resize_width=6 --resize_height=5", "png_db");
  ASSERT_EQ(png.exit_code, 0) << png.err;
  EXPECT_TRUE(Has(png.err, "encode_type specified, assuming encoded=true.")) << png.err;
  for (const auto& [key, datum] : ReadDb(dir + "/png_db")) {
    EXPECT_TRUE(datum.encoded()) << key;
    EXPECT_EQ(datum.data().compare(1, 3, "PNG"), 0) << key;
  }
  ExpectConverted(dir, "png_db", "resized");

  const CommandResult jpg = Convert(dir, "--encoded --encode_type=jpg", "jpg_db");
  ASSERT_EQ(jpg.exit_code, 0) << jpg.err;
  for (const auto& [key, datum] : ReadDb(dir + "/jpg_db"))
    EXPECT_EQ(datum.data().substr(0, 2), "\xff\xd8") << key;  // JPEG's start-of-image marker
}

TEST(ConvertImageset, ShuffleIsAFixedPermutation) {
  SKIP_WITHOUT_IMAGES();
  const std::string dir = MakeImages();
  const char* const paths[] = {"a.png", "dir with space/b c.jpg", "sub/gray.png"};
  const int ref_index[] = {0, 2, 3};
  std::string list;
  for (int line = 0; line < 12; ++line)
    list += std::string(paths[line % 3]) + " " + std::to_string(line) + "\n";
  WriteFile(dir + "/many.txt", list);
  ASSERT_EQ(Convert(dir, "--shuffle", "db1", "many.txt").exit_code, 0);
  const CommandResult again = Convert(dir, "--shuffle", "db2", "many.txt");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_TRUE(Has(again.err, "Shuffling data")) << again.err;

  const auto first = ReadDb(dir + "/db1"), second = ReadDb(dir + "/db2");
  ASSERT_EQ(first.size(), 12u);
  std::vector<int> labels;
  for (size_t k = 0; k < first.size(); ++k) {
    const auto& [key, datum] = first[k];
    EXPECT_EQ(key, second[k].first) << "the shuffle is not repeatable";
    const int line = datum.label();
    ASSERT_TRUE(line >= 0 && line < 12) << key;
    labels.push_back(line);
    EXPECT_EQ(key, Key(static_cast<int>(k), paths[line % 3]));  // index after shuffling, then the path
    ExpectPixels(datum, LoadRef(dir, ref_index[line % 3], "color"), key);
  }
  std::vector<int> sorted = labels;
  std::sort(sorted.begin(), sorted.end());
  for (int line = 0; line < 12; ++line) EXPECT_EQ(sorted[line], line) << "not a permutation";
  EXPECT_NE(labels, sorted) << "--shuffle left the order unchanged";
}

TEST(ConvertImageset, CheckSizeNamesTheLineAndLeavesNoDatabase) {
  SKIP_WITHOUT_IMAGES();
  const std::string dir = MakeImages();
  const std::string line = ErrorLine(Convert(dir, "--check_size", "db"), "convert_imageset");
  EXPECT_TRUE(Has(line, "list.txt:3: 'dir with space/b c.jpg' is 3×6×4")) << line;
  EXPECT_TRUE(Has(line, "first image is 3×5×7")) << line;
  EXPECT_FALSE(fs::exists(dir + "/db"));
}

TEST(ConvertImageset, NothingReadableIsAnError) {
  SKIP_WITHOUT_IMAGES();
  const std::string dir = MakeImages();
  WriteFile(dir + "/bad.txt", "bad.png 1\nmissing.png 2\n");
  const CommandResult r = Convert(dir, "", "db", "bad.txt");
  const std::string line = ErrorLine(r, "convert_imageset");
  EXPECT_TRUE(Has(line, "none of the 2 images")) << line;
  EXPECT_TRUE(Has(r.err, "bad.txt:1: skipping")) << r.err;
  EXPECT_TRUE(Has(r.err, "bad.txt:2: skipping: cannot read image '" + dir + "/images/missing.png'")) << r.err;
  EXPECT_FALSE(fs::exists(dir + "/db"));

  const CommandResult encoded = Convert(dir, "--encoded", "db", "bad.txt");  // the file-bytes path
  EXPECT_TRUE(Has(ErrorLine(encoded, "convert_imageset"), "none of the 2 images")) << encoded.err;
  EXPECT_TRUE(Has(encoded.err, "bad.txt:1: skipping: cannot read image '" + dir + "/images/bad.png'"))
      << encoded.err;
  EXPECT_FALSE(fs::exists(dir + "/db"));
}

TEST(ConvertImageset, UserMistakesAreOneLine) {
  SKIP_WITHOUT_IMAGES();
  const std::string dir = TempDir();
  fs::create_directories(dir + "/images");
  WriteFile(dir + "/list.txt", "a.png 1\n");
  WriteFile(dir + "/no_label.txt", "a.png 1\n\nb.png\n");
  WriteFile(dir + "/bad_label.txt", "a.png x1\n");
  fs::create_directories(dir + "/exists");
  const std::string ok = dir + "/images/ " + dir + "/list.txt " + dir + "/db";
  auto with_list = [&](const std::string& list) {
    return dir + "/images/ " + dir + "/" + list + " " + dir + "/db";
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {dir + "/nowhere/ " + dir + "/list.txt " + dir + "/db", "image folder '" + dir + "/nowhere/'"},
      {with_list("missing.txt"), "cannot open list file '" + dir + "/missing.txt'"},
      {with_list("no_label.txt"), "no_label.txt:3: expected 'relative/path label'"},
      {with_list("bad_label.txt"), "bad_label.txt:1: expected"},
      {dir + "/images/ " + dir + "/list.txt", "usage: convert_imageset"},
      {"--backend=rocksdb " + ok, "unknown --backend=rocksdb; use --backend=lmdb or --backend=leveldb"},
      {dir + "/images/ " + dir + "/list.txt " + dir + "/exists", "already exists"},
      {"--resize_width=6 " + ok, "give both"},
      {"--encode_type=gif " + ok, "--encode_type=gif is not supported"},
  };
  for (const auto& [args, part] : cases) {
    const std::string line = ErrorLine(RunTool("convert_imageset", args), "convert_imageset");
    EXPECT_TRUE(Has(line, part)) << args << "\n" << line;
  }
  EXPECT_FALSE(fs::exists(dir + "/db"));
  EXPECT_TRUE(fs::exists(dir + "/exists"));  // a database that was there already is left alone
}

// ---- compute_image_mean --------------------------------------------------------------------------

// The mean of the resized images, raw or as re-encoded PNGs, from an LMDB or a LevelDB, against numpy's.
TEST(ComputeImageMean, EqualsNumpyMean) {
  SKIP_WITHOUT_IMAGES();
  const std::string dir = MakeImages();
  ASSERT_EQ(Convert(dir, "--resize_width=6 --resize_height=5", "raw_db").exit_code, 0);
  ASSERT_EQ(Convert(dir, "--encode_type=png --resize_width=6 --resize_height=5", "png_db").exit_code, 0);
  ASSERT_EQ(Convert(dir, "--backend=leveldb --resize_width=6 --resize_height=5", "leveldb_db").exit_code, 0);
  const std::string expected_bytes = ReadFile(dir + "/ref/mean.bin");
  std::vector<double> expected(expected_bytes.size() / sizeof(double));
  std::memcpy(expected.data(), expected_bytes.data(), expected.size() * sizeof(double));
  std::vector<double> channel_means(3);
  std::ifstream(dir + "/ref/mean.txt") >> channel_means[0] >> channel_means[1] >> channel_means[2];
  ASSERT_EQ(expected.size(), 3u * 5 * 6);

  for (const std::string db : {"raw_db", "png_db", "leveldb_db"}) {
    const std::string mean_path = dir + "/" + db + ".binaryproto";
    const std::string flags = db == "leveldb_db" ? "--backend=leveldb " : "";
    const CommandResult r = RunTool("compute_image_mean", flags + dir + "/" + db + " " + mean_path);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    BlobProto mean;
    ReadProtoFromBinaryFile(mean_path, &mean);
    EXPECT_EQ(mean.num(), 1);
    EXPECT_EQ(mean.channels(), 3);
    EXPECT_EQ(mean.height(), 5);
    EXPECT_EQ(mean.width(), 6);
    ASSERT_EQ(mean.data_size(), static_cast<int>(expected.size())) << db;
    for (size_t i = 0; i < expected.size(); ++i)
      EXPECT_NEAR(mean.data(static_cast<int>(i)), expected[i], 1e-4) << db << " " << i;

    EXPECT_TRUE(Has(r.err, "Processed 3 files.")) << r.err;
    EXPECT_TRUE(Has(r.err, "Number of channels: 3")) << r.err;
    for (int c = 0; c < 3; ++c) {
      const std::string tag = "mean_value channel [" + std::to_string(c) + "]: ";
      const size_t at = r.err.find(tag);
      ASSERT_NE(at, std::string::npos) << r.err;
      EXPECT_NEAR(std::stod(r.err.substr(at + tag.size())), channel_means[c], 1e-3) << r.err;
    }
  }
}

TEST(ComputeImageMean, FloatDataAndNoOutputFile) {
  const std::string dir = TempDir();
  {
    LmdbWriter db(dir + "/db", "test");
    for (int n = 0; n < 4; ++n) {
      Datum d;
      d.set_channels(2), d.set_height(1), d.set_width(2);
      for (int i = 0; i < 4; ++i) d.add_float_data(0.25f * n + i);  // mean 0.375 + i
      db.Put("0000000" + std::to_string(n), d.SerializeAsString());
    }
    db.Finish();
  }
  const CommandResult r = RunTool("compute_image_mean", dir + "/db");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.err, "Number of channels: 2")) << r.err;
  EXPECT_TRUE(Has(r.err, "mean_value channel [0]: 0.875")) << r.err;
  EXPECT_TRUE(Has(r.err, "mean_value channel [1]: 2.875")) << r.err;
  EXPECT_FALSE(Has(r.err, "Write to")) << r.err;
  EXPECT_FALSE(Has(r.err, "Restarting")) << r.err;
}

TEST(ComputeImageMean, ErrorsNameTheRecord) {
  const std::string dir = TempDir();
  {
    LmdbWriter db(dir + "/mixed", "test");
    for (int n = 0; n < 2; ++n) {
      Datum d;
      d.set_channels(1), d.set_height(2), d.set_width(2 + n);
      d.set_data(std::string(size_t(2 * (2 + n)), '\x07'));
      db.Put("key" + std::to_string(n), d.SerializeAsString());
    }
    db.Finish();
    LmdbWriter(dir + "/empty", "test").Finish();
  }
  const std::string mean = dir + "/mean.binaryproto";
  std::string line = ErrorLine(RunTool("compute_image_mean", dir + "/mixed " + mean), "compute_image_mean");
  EXPECT_TRUE(Has(line, "record 'key1'") && Has(line, "is 1×2×3") && Has(line, "first record is 1×2×2"))
      << line;
  EXPECT_FALSE(fs::exists(mean));
  line = ErrorLine(RunTool("compute_image_mean", dir + "/empty " + mean), "compute_image_mean");
  EXPECT_TRUE(Has(line, "holds no records")) << line;
  line = ErrorLine(RunTool("compute_image_mean", dir + "/missing"), "compute_image_mean");
  EXPECT_TRUE(Has(line, "cannot open LMDB '" + dir + "/missing'")) << line;
  line = ErrorLine(RunTool("compute_image_mean", ""), "compute_image_mean");
  EXPECT_TRUE(Has(line, "usage: compute_image_mean")) << line;
  line = ErrorLine(RunTool("compute_image_mean", "--backend=leveldb " + dir + "/mixed"),
                   "compute_image_mean");
  EXPECT_TRUE(Has(line, "cannot open LevelDB '" + dir + "/mixed': it holds an LMDB (data.mdb)")) << line;
  line = ErrorLine(RunTool("compute_image_mean", "--backend=leveldb " + dir + "/missing"), "compute_image_mean");
  EXPECT_TRUE(Has(line, "cannot open LevelDB '" + dir + "/missing': No such file or directory")) << line;
  line = ErrorLine(RunTool("compute_image_mean", "--backend=rocksdb " + dir + "/mixed"), "compute_image_mean");
  EXPECT_TRUE(Has(line, "unknown --backend=rocksdb")) << line;
}

// A damaged first record whose header claims far more values than it holds (1×46340×46340: 16 GiB of
// sums), negative axes (whose size_t product wrapped to 1) or a C·H·W past int64 is refused before the
// sums are allocated.
TEST(ComputeImageMean, DamagedFirstRecordIsRefusedBeforeAllocating) {
  struct Case {
    int c, h, w;
    std::string bytes;
    int floats;
    std::string expected;  // after "record 'key0' of '<db>' "
  };
  const std::vector<Case> cases = {
      {1, 46340, 46340, std::string(15, '\x07'), 0, "holds 15 bytes of pixels; its shape needs 2147395600"},
      {1, 46340, 46340, "", 3, "holds 3 float values; its shape needs 2147395600"},
      {-1, -1, 1, std::string(1, '\x07'), 0, "has shape -1×-1×1 (C×H×W); every axis must be positive"},
      {16, 1 << 30, 1 << 30, "", 0, "has shape 16×1073741824×1073741824 (C×H×W), more than 2^63 values"},
  };
  for (const Case& c : cases) {
    const std::string db = NewTempDir() + "/db";
    {
      LmdbWriter writer(db, "test");
      Datum d;
      d.set_channels(c.c), d.set_height(c.h), d.set_width(c.w), d.set_data(c.bytes);
      for (int i = 0; i < c.floats; ++i) d.add_float_data(1.0f);
      writer.Put("key0", d.SerializeAsString());
      writer.Finish();
    }
    const std::string mean = db + "/../mean.binaryproto";
    EXPECT_EQ(ErrorLine(RunTool("compute_image_mean", db + " " + mean), "compute_image_mean"),
              "compute_image_mean: error: record 'key0' of '" + db + "' " + c.expected);
    EXPECT_FALSE(fs::exists(mean));
  }
}

}  // namespace cortado::test
