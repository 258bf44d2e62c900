// extract_features_test.cpp — the built extract_features end to end: a Data layer over a random LMDB
// feeds an InnerProduct whose weights the test writes as a .caffemodel (and .caffemodel.h5); every
// value the tool saves is compared with W·x + b computed here from the LMDB's own pixels, with the
// keys, the counts over several batches (the data wrapping around) and each mistake's one-line error.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cortado/cortado.pb.h"
#include "cortado/data/lmdb.hpp"
#include "cortado/data/records.hpp"
#include "cortado/hdf5.hpp"
#include "cortado/io.hpp"
#include "gpu/gpu_compare.hpp"  // SKIP_WITHOUT_GPU
#include "test_util.hpp"

namespace cortado::test {

namespace {

namespace fs = std::filesystem;

constexpr int kRecords = 7, kChannels = 2, kSize = 2, kInputs = kChannels * kSize * kSize, kOutputs = 3;
constexpr float kScale = 1.0f / 256;

bool Has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

float Weight(int o, int k) { return 0.25f * (o + 1) - 0.125f * k; }
float Bias(int o) { return 0.5f - 0.75f * o; }

// A directory with the LMDB "images", the net "net.prototxt" (Data with batch_size, then InnerProduct
// "ip" with top "ip") and the weights "w.caffemodel".
std::string MakeWorkspace(int batch_size) {
  const std::string dir = NewTempDir();
  WriteRandomImageLmdb(dir + "/images", kRecords, kChannels, kSize, 5, 1701);
  std::ofstream(dir + "/net.prototxt")
      << "name: \"features\"\n"
      << "layer { name: \"data\" type: \"Data\" top: \"data\" top: \"label\" include { phase: TEST }\n"
      << "  transform_param { scale: " << kScale << " }\n"
      << "  data_param { source: \"" << dir << "/images\" batch_size: " << batch_size << " backend: LMDB } }\n"
      << "layer { name: \"data\" type: \"Data\" top: \"data\" top: \"label\" include { phase: TRAIN }\n"
      << "  data_param { source: \"/nonexistent\" batch_size: 1 backend: LMDB } }\n"
      << "layer { name: \"ip\" type: \"InnerProduct\" bottom: \"data\" top: \"ip\"\n"
      << "  inner_product_param { num_output: " << kOutputs << " } }\n";
  NetParameter weights;
  LayerParameter* ip = weights.add_layer();
  ip->set_name("ip");
  ip->set_type("InnerProduct");
  BlobProto* w = ip->add_blobs();
  w->mutable_shape()->add_dim(kOutputs);
  w->mutable_shape()->add_dim(kInputs);
  for (int o = 0; o < kOutputs; ++o)
    for (int k = 0; k < kInputs; ++k) w->add_data(Weight(o, k));
  BlobProto* b = ip->add_blobs();
  b->mutable_shape()->add_dim(kOutputs);
  for (int o = 0; o < kOutputs; ++o) b->add_data(Bias(o));
  WriteProtoToBinaryFile(weights, dir + "/w.caffemodel");
  if (HaveHdf5Support()) WriteNetParameterToHdf5(weights, dir + "/w.caffemodel.h5");
  return dir;
}

// The LMDB's inputs as the Data layer gives them: record r's pixels × kScale.
std::vector<std::vector<double>> Inputs(const std::string& dir) {
  std::vector<std::vector<double>> inputs;
  LmdbRecords records(dir + "/images", "test");
  for (int r = 0; r < kRecords; ++r) {
    Datum d;
    EXPECT_TRUE(d.ParseFromArray(records.value(r).data(), static_cast<int>(records.value(r).size())));
    std::vector<double> x;
    for (unsigned char p : d.data()) x.push_back(p * double(kScale));
    inputs.push_back(x);
  }
  return inputs;
}

struct Record {
  std::string key;
  Datum datum;
};
std::vector<Record> ReadDb(const std::string& path, DataParameter::DB backend = DataParameter::LMDB) {
  std::vector<Record> records;
  const auto db = OpenRecords(backend, path, "test");
  for (uint64_t i = 0; i < db->size(); ++i) {
    Record r{std::string(db->key(i)), Datum()};
    EXPECT_TRUE(r.datum.ParseFromArray(db->value(i).data(), static_cast<int>(db->value(i).size())));
    records.push_back(r);
  }
  return records;
}

std::string Key(int i) {
  char key[16];
  std::snprintf(key, sizeof(key), "%010d", i);
  return key;
}

CommandResult Extract(const std::string& args) { return RunCommand(ToolPath("extract_features") + " " + args); }

// The tool failed as a user's mistake: exit 1, one line "extract_features: error: ..." and no crash.
std::string ErrorLine(const CommandResult& r) {
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_FALSE(Has(r.err, "Check failed") || Has(r.err, "*** ") || Has(r.err, "terminate called")) << r.err;
  const std::string last = LastLine(r.err);
  EXPECT_EQ(last.rfind("extract_features: error: ", 0), 0u) << r.err;
  return last;
}

// Item i of the run is record i % kRecords (the Data layer reads in key order and wraps around).
void ExpectIpFeatures(const std::string& db, const std::vector<std::vector<double>>& inputs, int items,
                      DataParameter::DB backend = DataParameter::LMDB) {
  const auto records = ReadDb(db, backend);
  ASSERT_EQ(records.size(), size_t(items)) << db;
  for (int i = 0; i < items; ++i) {
    const auto& [key, d] = records[i];
    ASSERT_EQ(key, Key(i));
    EXPECT_EQ(d.channels(), kOutputs) << key;
    EXPECT_EQ(d.height(), 1) << key;
    EXPECT_EQ(d.width(), 1) << key;
    EXPECT_FALSE(d.has_data()) << key;
    EXPECT_FALSE(d.has_label()) << key;
    ASSERT_EQ(d.float_data_size(), kOutputs) << key;
    const std::vector<double>& x = inputs[i % kRecords];
    for (int o = 0; o < kOutputs; ++o) {
      double y = Bias(o);
      for (int k = 0; k < kInputs; ++k) y += double(Weight(o, k)) * x[k];
      EXPECT_NEAR(d.float_data(o), y, 1e-5 * std::max(1.0, std::fabs(y))) << key << " output " << o;
    }
  }
}

}  // namespace

TEST(ExtractFeatures, SavesEveryItemOfEveryBatchAsCaffeDoes) {
  const std::string dir = MakeWorkspace(3);
  const auto inputs = Inputs(dir);
  // Two blobs in one pass: 4 batches of 3 = 12 items, wrapping around the 7 records.
  const auto r = Extract(dir + "/w.caffemodel " + dir + "/net.prototxt ip,data " + dir + "/ip_db," + dir +
                         "/data_db 4 lmdb");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.err, "Using CPU")) << r.err;
  EXPECT_TRUE(Has(r.err, "Extracted features of 12 query images for feature blob ip")) << r.err;
  EXPECT_TRUE(Has(r.err, "Extracted features of 12 query images for feature blob data")) << r.err;
  EXPECT_TRUE(Has(r.err, "Successfully extracted the features!")) << r.err;
  ExpectIpFeatures(dir + "/ip_db", inputs, 12);

  // The data blob: the scaled pixels themselves, C·H·W values per item.
  const auto data = ReadDb(dir + "/data_db");
  ASSERT_EQ(data.size(), 12u);
  for (int i = 0; i < 12; ++i) {
    EXPECT_EQ(data[i].key, Key(i));
    EXPECT_EQ(data[i].datum.channels(), kInputs);
    ASSERT_EQ(data[i].datum.float_data_size(), kInputs);
    for (int k = 0; k < kInputs; ++k)
      EXPECT_FLOAT_EQ(data[i].datum.float_data(k), float(inputs[i % kRecords][k])) << data[i].key;
  }
}

TEST(ExtractFeatures, CommitsThousandsAcrossBatchesAndReadsHdf5Weights) {
  // 5 batches of 250 = 1250 items: one commit at 1000, the tail at the end; keys keep counting.
  const std::string dir = MakeWorkspace(250);
  const auto inputs = Inputs(dir);
  const auto r = Extract(dir + "/w.caffemodel " + dir + "/net.prototxt ip " + dir + "/ip_db 5 lmdb CPU");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.err, "Extracted features of 1000 query images for feature blob ip")) << r.err;
  EXPECT_TRUE(Has(r.err, "Extracted features of 1250 query images for feature blob ip")) << r.err;
  ExpectIpFeatures(dir + "/ip_db", inputs, 1250);

  // The same into a LevelDB.
  const auto level = Extract(dir + "/w.caffemodel " + dir + "/net.prototxt ip " + dir + "/level_db 5 leveldb");
  ASSERT_EQ(level.exit_code, 0) << level.err;
  ExpectIpFeatures(dir + "/level_db", inputs, 1250, DataParameter::LEVELDB);

  if (!HaveHdf5Support()) GTEST_SKIP() << "this build has no HDF5";
  const auto h5 = Extract(dir + "/w.caffemodel.h5 " + dir + "/net.prototxt ip " + dir + "/h5_db 1 lmdb CPU 0");
  ASSERT_EQ(h5.exit_code, 0) << h5.err;
  ExpectIpFeatures(dir + "/h5_db", inputs, 250);
}

TEST(ExtractFeatures, GpuMatchesTheIndependentComputation) {
  SKIP_WITHOUT_GPU();
  const std::string dir = MakeWorkspace(4);
  const auto r = Extract(dir + "/w.caffemodel " + dir + "/net.prototxt ip " + dir + "/ip_db 3 lmdb GPU 0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.err, "Using GPU")) << r.err;
  EXPECT_TRUE(Has(r.err, "Using Device_id=0")) << r.err;
  ExpectIpFeatures(dir + "/ip_db", Inputs(dir), 12);
}

TEST(ExtractFeatures, GpuWithoutOneIsAClearError) {
  if (GpuCount() > 0) GTEST_SKIP() << "this machine has a GPU";
  const std::string dir = MakeWorkspace(2);
  const std::string line =
      ErrorLine(Extract(dir + "/w.caffemodel " + dir + "/net.prototxt ip " + dir + "/out 1 lmdb GPU"));
  EXPECT_TRUE(Has(line, BuiltWithCuda() ? "GPU requested but no GPU was found"
                                        : "GPU requested but this build has no CUDA support"))
      << line;
  EXPECT_FALSE(fs::exists(dir + "/out"));
}

TEST(ExtractFeatures, MistakesAreOneLineAndLeaveNoDatabase) {
  const std::string dir = MakeWorkspace(2);
  const std::string w = dir + "/w.caffemodel ", net = dir + "/net.prototxt ", out = dir + "/out";
  fs::create_directory(dir + "/taken");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "expected 6 to 8 arguments, got 0; usage: extract_features WEIGHTS NET.prototxt"},
      {w + net + "ip " + out + " 1", "expected 6 to 8 arguments, got 5; usage: "},
      {w + net + "ip " + out + " 1 lmdb CPU 0 extra", "expected 6 to 8 arguments, got 9; usage: "},
      {w + net + "nope " + out + " 1 lmdb",
       "unknown feature blob name 'nope' in the network " + dir + "/net.prototxt (its blobs: data, label, ip)"},
      {w + net + "ip,lable " + out + "," + dir + "/out2 1 lmdb", "did you mean 'label'?"},
      {w + net + "ip " + dir + "/taken 1 lmdb", "dataset '" + dir + "/taken' already exists"},
      {w + net + "ip,data " + out + " 1 lmdb", "the number of blob names (2: ip,data) and dataset names (1: "},
      {w + net + "ip " + out + "," + dir + "/out2 1 lmdb", "the number of blob names (1: ip) and dataset names (2"},
      {w + net + "ip,data " + out + "," + out + " 1 lmdb", "is named twice"},
      {w + net + "ip,,data " + out + " 1 lmdb", "the feature blob name list 'ip,,data' has an empty name"},
      {w + net + "ip " + out + " 0 lmdb", "num_mini_batches must be a positive integer, got '0'"},
      {w + net + "ip " + out + " -2 lmdb", "num_mini_batches must be a positive integer, got '-2'"},
      {w + net + "ip " + out + " 2x lmdb", "num_mini_batches must be a positive integer, got '2x'"},
      {w + net + "ip " + out + " 1 rocksdb", "unknown db_type 'rocksdb' (use lmdb or leveldb)"},
      {w + net + "ip " + out + " 1 lmdb TPU", "the device argument must be CPU or GPU, got 'TPU'"},
      {w + net + "ip " + out + " 1 lmdb CPU -1", "DEVICE_ID must be a non-negative integer, got '-1'"},
      {dir + "/missing.caffemodel " + net + "ip " + out + " 1 lmdb", "weights file '" + dir +
                                                                         "/missing.caffemodel' does not exist"},
      {w + dir + "/missing.prototxt ip " + out + " 1 lmdb", "missing.prototxt"},
  };
  for (const auto& [args, expected] : cases) {
    const std::string line = ErrorLine(Extract(args));
    EXPECT_TRUE(Has(line, expected)) << "args: " << args << "\nline: " << line;
    EXPECT_FALSE(fs::exists(out)) << args;
    EXPECT_FALSE(fs::exists(dir + "/out2")) << args;
  }
  EXPECT_TRUE(fs::is_directory(dir + "/taken"));  // never touched

  // Weights that do not fit the net fail after the net is built, still before any database exists.
  NetParameter wrong;
  LayerParameter* ip = wrong.add_layer();
  ip->set_name("ip");
  BlobProto* blob = ip->add_blobs();
  blob->mutable_shape()->add_dim(2);
  blob->mutable_shape()->add_dim(2);
  blob->add_data(0), blob->add_data(0), blob->add_data(0), blob->add_data(0);
  WriteProtoToBinaryFile(wrong, dir + "/wrong.caffemodel");
  const std::string line = ErrorLine(Extract(dir + "/wrong.caffemodel " + net + "ip " + out + " 1 lmdb"));
  EXPECT_TRUE(Has(line, "wrong.caffemodel")) << line;
  EXPECT_FALSE(fs::exists(out));
}

TEST(ExtractFeatures, RunThatFailsMidwayRemovesItsDatabases) {
  // Records 0-3 are images, record 4 is not a Datum: the third batch of 2 fails after the databases
  // were created and the first batches written.
  const std::string dir = MakeWorkspace(2);
  {
    LmdbWriter db(dir + "/bad_images", "test");
    for (int i = 0; i < 5; ++i) {
      Datum d;
      d.set_channels(kChannels), d.set_height(kSize), d.set_width(kSize);
      d.set_data(std::string(kInputs, char(i)));
      db.Put(Key(i), i < 4 ? d.SerializeAsString() : "not a datum");
    }
    db.Finish();
  }
  std::string net = ReadFile(dir + "/net.prototxt");
  net.replace(net.find("/images\""), 8, "/bad_images\"");
  WriteFile(dir + "/bad.prototxt", net);
  const auto r = Extract(dir + "/w.caffemodel " + dir + "/bad.prototxt ip,data " + dir + "/out," + dir +
                         "/out2 3 lmdb");
  EXPECT_TRUE(Has(r.err, "Extracting Features")) << r.err;  // failed after creating the databases
  const std::string line = ErrorLine(r);
  EXPECT_TRUE(Has(line, "bad_images")) << line;
  EXPECT_FALSE(fs::exists(dir + "/out"));
  EXPECT_FALSE(fs::exists(dir + "/out2"));
}

}  // namespace cortado::test
