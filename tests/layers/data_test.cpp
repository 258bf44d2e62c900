// data_test.cpp — the Data layer over a tiny LMDB: batches and labels in key order across the wrap,
// any prefetch depth, identical batches for identical seeds, rand_skip, errors from setup and from
// the prefetch thread, and a destructor that never hangs.
#include <chrono>
#include <cstdio>
#include <future>
#include <memory>
#include <thread>

#include "cortado/data/lmdb.hpp"
#include "cortado/error.hpp"
#include "layers/pipeline_data_layer.hpp"  // DataLayer (the layers' own header, beside them)
#include "test_util.hpp"

namespace cortado::test {

namespace {

// Record i: a C×H×W datum with pixel j = (13·i + j) % 256 and label 10 + i.
uint8_t Pixel(int record, int j) { return static_cast<uint8_t>((13 * record + j) % 256); }

std::string BuildDb(int records, int c, int h, int w, const std::string& corrupt_key = "") {
  const std::string path = TempDir() + "/db";
  LmdbWriter writer(path, "test");
  Datum datum;
  datum.set_channels(c), datum.set_height(h), datum.set_width(w);
  for (int i = 0; i < records; ++i) {
    std::string pixels;
    for (int j = 0; j < c * h * w; ++j) pixels.push_back(static_cast<char>(Pixel(i, j)));
    datum.set_data(pixels);
    datum.set_label(10 + i);
    char key[16];
    std::snprintf(key, sizeof(key), "%08d", i);
    writer.Put(key, key == corrupt_key ? std::string("\xff\xff\xff\xff", 4) : datum.SerializeAsString());
  }
  writer.Finish();
  return path;
}

std::string DataLayerText(const std::string& source, int batch, const std::string& extra = "",
                          const std::string& transform = "") {
  return "name: 'data' type: 'Data' data_param { source: '" + source + "' backend: LMDB batch_size: " +
         std::to_string(batch) + " " + extra + " } transform_param { " + transform + " }";
}

bool Contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Checks that the fixture's tops hold records first, first+1, ... (mod n), scaled by `scale`.
void ExpectRecords(LayerFixture& f, int first, int n, int item, float scale) {
  const int batch = f.top(0).shape(0);
  for (int b = 0; b < batch; ++b) {
    const int record = (first + b) % n;
    ASSERT_EQ(f.top(1).data()[b], 10 + record) << "item " << b;
    for (int j = 0; j < item; ++j)
      ASSERT_FLOAT_EQ(f.top(0).data()[b * item + j], Pixel(record, j) * scale) << "item " << b << " pixel " << j;
  }
}

DataLayer& AsData(LayerFixture& f) { return dynamic_cast<DataLayer&>(f.layer()); }

}  // namespace

TEST(DataLayer, BatchesInKeyOrderAcrossTheWrap) {
  const std::string db = BuildDb(5, 2, 3, 2);
  for (int prefetch : {1, 2, 4}) {
    SCOPED_TRACE("prefetch " + std::to_string(prefetch));
    LayerFixture f(DataLayerText(db, 3, "prefetch: " + std::to_string(prefetch), "scale: 0.5"), {}, 2);
    EXPECT_EQ(f.top(0).shape(), (std::vector<int>{3, 2, 3, 2}));
    EXPECT_EQ(f.top(1).shape(), (std::vector<int>{3}));
    for (int step = 0; step < 6; ++step) {
      f.Forward();
      ExpectRecords(f, 3 * step, 5, 12, 0.5f);
      EXPECT_EQ(AsData(f).records_consumed(), 3u * (step + 1));
    }
  }
}

TEST(DataLayer, DataOnlyWithoutLabelTop) {
  const std::string db = BuildDb(3, 1, 2, 2);
  LayerFixture f(DataLayerText(db, 2), {}, 1);
  EXPECT_EQ(f.top(0).shape(), (std::vector<int>{2, 1, 2, 2}));
  f.Forward();
  f.Forward();  // records 2, 0
  for (int j = 0; j < 4; ++j) {
    EXPECT_EQ(f.top(0).data()[j], Pixel(2, j));
    EXPECT_EQ(f.top(0).data()[4 + j], Pixel(0, j));
  }
}

TEST(DataLayer, CentreCropInTest) {
  const std::string db = BuildDb(2, 1, 4, 4);
  LayerFixture f("phase: TEST " + DataLayerText(db, 2, "", "crop_size: 2"), {}, 2);
  EXPECT_EQ(f.top(0).shape(), (std::vector<int>{2, 1, 2, 2}));
  f.Forward();
  const int window[] = {5, 6, 9, 10};  // rows 1–2, columns 1–2 of a 4×4 image
  for (int b = 0; b < 2; ++b)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(f.top(0).data()[b * 4 + j], Pixel(b, window[j]));
}

TEST(DataLayer, IdenticalSeedsGiveIdenticalBatches) {
  const std::string db = BuildDb(7, 2, 6, 6);
  const std::string text = DataLayerText(db, 4, "rand_skip: 5", "crop_size: 4 mirror: true");
  auto run = [&](uint32_t seed) {
    LayerFixture f(text, {}, 2, seed);
    std::vector<float> all;
    for (int step = 0; step < 4; ++step) {
      f.Forward();
      all.insert(all.end(), f.top(0).data(), f.top(0).data() + f.top(0).count());
      all.insert(all.end(), f.top(1).data(), f.top(1).data() + f.top(1).count());
    }
    return all;
  };
  const std::vector<float> a = run(11), b = run(11), c = run(12);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(DataLayer, RandSkipStartsLaterInTheDatabase) {
  const std::string db = BuildDb(5, 1, 1, 2);
  bool skipped_some = false;
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    LayerFixture f(DataLayerText(db, 2, "rand_skip: 4"), {}, 2, seed);
    const uint64_t skip = AsData(f).records_skipped();
    ASSERT_LT(skip, 4u);
    skipped_some |= skip > 0;
    f.Forward();
    ExpectRecords(f, static_cast<int>(skip), 5, 2, 1.0f);
  }
  EXPECT_TRUE(skipped_some);
}

TEST(DataLayer, LmdbWithoutBackendSaysSetBackendLmdb) {
  const std::string db = BuildDb(1, 1, 1, 1);
  const std::string message = ErrorOf(
      [&] { LayerFixture f("name: 'mnist' type: 'Data' data_param { source: '" + db + "' batch_size: 1 }", {}, 2); });
  EXPECT_EQ(message, "layer mnist (Data): '" + db + "' is an LMDB but data_param.backend is LEVELDB (Caffe's "
                     "default when backend is not given); set backend: LMDB");
}

TEST(DataLayer, MissingSource) {
  const std::string path = TempDir() + "/missing_lmdb";
  const std::string message = ErrorOf([&] { LayerFixture f(DataLayerText(path, 1), {}, 2); });
  EXPECT_EQ(message, "layer data (Data): cannot open LMDB '" + path + "': No such file or directory");
}

TEST(DataLayer, TopCountsAndBatchSize) {
  const std::string db = BuildDb(1, 1, 1, 1);
  EXPECT_TRUE(Contains(ErrorOf([&] { LayerFixture f(DataLayerText(db, 1), {}, 3); }), "at most 2 top"));
  EXPECT_TRUE(Contains(ErrorOf([&] { LayerFixture f(DataLayerText(db, 1), {{1}}, 1); }), "exactly 0 bottom"));
  EXPECT_TRUE(Contains(ErrorOf([&] { LayerFixture f(DataLayerText(db, 0), {}, 1); }), "batch_size"));
}

TEST(DataLayer, CorruptRecordIsRethrownByForward) {
  const std::string db = BuildDb(6, 1, 2, 2, "00000003");
  LayerFixture f(DataLayerText(db, 2), {}, 2);
  f.Forward();  // records 0, 1
  ExpectRecords(f, 0, 6, 4, 1.0f);
  const std::string message = ErrorOf([&] { f.Forward(); });  // record 3 is garbage
  EXPECT_TRUE(Contains(message, "record '00000003'")) << message;
  EXPECT_TRUE(Contains(message, "is not a Datum")) << message;
  EXPECT_EQ(ErrorOf([&] { f.Forward(); }), message);  // and stays an error
}

TEST(DataLayer, RecordOfAnotherShapeIsRethrownByForward) {
  const std::string db = TempDir() + "/db";
  {
    LmdbWriter writer(db, "test");
    Datum d;
    d.set_channels(1), d.set_height(1), d.set_width(2), d.set_data(std::string(2, '\1'));
    writer.Put("a", d.SerializeAsString());
    d.set_width(3), d.set_data(std::string(3, '\1'));
    writer.Put("b", d.SerializeAsString());
    writer.Finish();
  }
  LayerFixture f(DataLayerText(db, 2), {}, 2);
  const std::string message = ErrorOf([&] { f.Forward(); });
  EXPECT_TRUE(Contains(message, "record 'b' has shape 1×1×3")) << message;
}

// A damaged first record whose header claims far more values than it holds is refused at setup,
// before its shape sizes the batches (1×46340×46340 would be 8 GiB per item; 16×2^30×2^30 wraps int64).
TEST(DataLayer, FirstRecordHoldingFewerValuesThanItsShapeIsASetupError) {
  struct Case {
    int c, h, w;
    std::string bytes;
    int floats;
    std::string expected;  // after "record '00000000' of LMDB '<db>' has shape "
  };
  const std::vector<Case> cases = {
      {1, 46340, 46340, std::string(15, '\1'), 0, "1×46340×46340 but holds 15 values instead of 2147395600"},
      {1, 46340, 46340, "", 3, "1×46340×46340 but holds 3 values instead of 2147395600"},
      {16, 1 << 30, 1 << 30, "", 0, "16×1073741824×1073741824 but holds 0 values instead of more than 2^63"},
      {1, 2, 2, std::string(5, '\1'), 0, "1×2×2 but holds 5 values instead of 4"},
  };
  for (const Case& c : cases) {
    const std::string db = NewTempDir() + "/db";
    {
      LmdbWriter writer(db, "test");
      Datum d;
      d.set_channels(c.c), d.set_height(c.h), d.set_width(c.w), d.set_data(c.bytes);
      for (int i = 0; i < c.floats; ++i) d.add_float_data(1.0f);
      writer.Put("00000000", d.SerializeAsString());
      writer.Finish();
    }
    const std::string message = ErrorOf([&] { LayerFixture f(DataLayerText(db, 4, "prefetch: 4"), {}, 2); });
    EXPECT_EQ(message, "layer data (Data): record '00000000' of LMDB '" + db + "' has shape " + c.expected);
  }
}

TEST(DataLayer, DestructorNeverHangs) {
  const std::string db = BuildDb(4, 1, 2, 2);
  for (int consumed : {0, 1, 3}) {
    auto f = std::make_unique<LayerFixture>(DataLayerText(db, 1, "prefetch: 2"), std::vector<std::vector<int>>{}, 2);
    for (int i = 0; i < consumed; ++i) f->Forward();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the thread now waits for a free batch
    auto done = std::make_shared<std::promise<void>>();
    std::future<void> finished = done->get_future();
    std::thread([done, layer = f.release()] {  // on a hang this thread is abandoned
      delete layer;
      done->set_value();
    }).detach();
    ASSERT_EQ(finished.wait_for(std::chrono::seconds(10)), std::future_status::ready) << "consumed " << consumed;
  }
}

TEST(DataLayer, DestructorRightAfterSetUp) {
  const std::string db = BuildDb(50, 3, 8, 8);
  for (int i = 0; i < 20; ++i) LayerFixture f(DataLayerText(db, 16, "prefetch: 8"), {}, 2);
}

}  // namespace cortado::test
