// record_cache_test.cpp — data_param cache (CacheRecords): each record read from the database once,
// whatever the threads, with the same bytes; a Data layer with cache gives the batches it gives
// without; and after the first epoch a cached layer reads no database (its data.mdb overwritten with
// zeros changes nothing, while an uncached layer then fails on the zeros).
#include <atomic>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cortado/data/records.hpp"
#include "cortado/error.hpp"
#include "layers/pipeline_data_layer.hpp"  // DataLayer
#include "test_util.hpp"

namespace cortado::test {

namespace {

// Records in memory, counting the reads of their values.
class CountingSource : public RecordSource {
 public:
  explicit CountingSource(int n) {
    for (int i = 0; i < n; ++i) {
      keys_.push_back("k" + std::to_string(i));
      values_.push_back(std::string(i + 1, static_cast<char>('a' + i % 26)));
    }
  }
  uint64_t size() const override { return values_.size(); }
  std::string_view key(uint64_t i) const override { return keys_[i]; }
  std::string_view value(uint64_t i) const override {
    ++reads_;
    return values_[i];
  }
  const std::string& path() const override { return path_; }
  const char* backend_name() const override { return "counted"; }
  int reads() const { return reads_; }
  const std::string& expected(uint64_t i) const { return values_[i]; }

 private:
  std::vector<std::string> keys_, values_;
  std::string path_ = "/in/memory";
  mutable std::atomic<int> reads_{0};
};

// Every record read by `threads` threads at once, each in its own order; false on a wrong value.
bool ReadAll(const RecordSource& records, const CountingSource& truth, int threads) {
  std::atomic<bool> right{true};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (uint64_t k = 0; k < records.size(); ++k) {
        const uint64_t i = (k * 7 + t) % records.size();
        if (records.value(i) != truth.expected(i)) right = false;
      }
    });
  for (auto& thread : pool) thread.join();
  return right;
}

std::string DataText(const std::string& source, bool cache) {
  return "name: 'data' type: 'Data' data_param { source: '" + source + "' backend: LMDB batch_size: 3 shuffle: true" +
         (cache ? " cache: true" : "") + " } transform_param { crop_size: 6 mirror: true scale: 0.5 }";
}

std::vector<float> Batch(LayerFixture& f) {
  f.Forward();
  std::vector<float> batch(f.top(0).data(), f.top(0).data() + f.top(0).count());
  batch.insert(batch.end(), f.top(1).data(), f.top(1).data() + f.top(1).count());
  return batch;
}

// Overwrites the file's bytes with zeros in place (no truncation: the LMDB's memory map stays valid).
void ZeroInPlace(const std::string& path) {
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  ASSERT_TRUE(file.is_open()) << path;
  file.seekg(0, std::ios::end);
  const std::string zeros(static_cast<size_t>(file.tellg()), '\0');
  file.seekp(0);
  file.write(zeros.data(), static_cast<std::streamsize>(zeros.size()));
  file.flush();
  ASSERT_TRUE(file.good()) << path;
}

}  // namespace

TEST(RecordCache, EachRecordIsReadFromTheSourceOnce) {
  auto owned = std::make_unique<CountingSource>(50);
  const CountingSource& source = *owned;
  const std::unique_ptr<RecordSource> cached = CacheRecords(std::move(owned));
  EXPECT_EQ(cached->size(), 50u);
  EXPECT_EQ(cached->key(3), "k3");
  EXPECT_EQ(cached->path(), "/in/memory");
  EXPECT_STREQ(cached->backend_name(), "counted");
  EXPECT_TRUE(ReadAll(*cached, source, 1));
  EXPECT_EQ(source.reads(), 50);
  EXPECT_TRUE(ReadAll(*cached, source, 8));  // later epochs, from several threads: from memory
  EXPECT_EQ(source.reads(), 50);
  const std::string_view first = cached->value(0);
  cached->value(1);
  EXPECT_EQ(first, source.expected(0));  // views stay valid
}

// First reads racing on one record are still right, and once every record is in, nothing more is read.
TEST(RecordCache, ConcurrentFirstReads) {
  auto owned = std::make_unique<CountingSource>(200);
  const CountingSource& source = *owned;
  const std::unique_ptr<RecordSource> cached = CacheRecords(std::move(owned));
  EXPECT_TRUE(ReadAll(*cached, source, 8));
  const int reads = source.reads();
  EXPECT_GE(reads, 200);
  EXPECT_TRUE(ReadAll(*cached, source, 8));
  EXPECT_EQ(source.reads(), reads);
}

TEST(RecordCache, DataLayerBatchesAreTheSameWithAndWithoutCache) {
  const std::string db = WriteRandomImageLmdb(TempDir() + "/db", 7, 2, 8, 3, 21);
  LayerFixture plain(DataText(db, false), {}, 2, 5), cached(DataText(db, true), {}, 2, 5);
  for (int step = 0; step < 8; ++step) EXPECT_EQ(Batch(cached), Batch(plain)) << "step " << step;  // 3+ epochs
}

TEST(RecordCache, AfterTheFirstEpochTheDatabaseIsNotRead) {
  const std::string dir = TempDir();
  const std::string cached_db = WriteRandomImageLmdb(dir + "/cached", 7, 2, 8, 3, 21);
  const std::string plain_db = WriteRandomImageLmdb(dir + "/plain", 7, 2, 8, 3, 21);
  std::vector<std::vector<float>> expected;
  {
    LayerFixture reference(DataText(cached_db, false), {}, 2, 5);
    for (int step = 0; step < 12; ++step) expected.push_back(Batch(reference));
  }
  LayerFixture cached(DataText(cached_db, true), {}, 2, 5), plain(DataText(plain_db, false), {}, 2, 5);
  for (int step = 0; step < 3; ++step) {  // 9 records: every record has been loaded
    EXPECT_EQ(Batch(cached), expected[step]);
    Batch(plain);
  }
  ZeroInPlace(cached_db + "/data.mdb");
  ZeroInPlace(plain_db + "/data.mdb");
  for (int step = 3; step < 12; ++step) EXPECT_EQ(Batch(cached), expected[step]) << "step " << step;
  // The same zeros reach an uncached layer once its prefetched batches are used up.
  std::string error;
  for (int step = 3; step < 12 && error.empty(); ++step) {
    try {
      Batch(plain);
    } catch (const Error& e) {
      error = e.what();
    }
  }
  EXPECT_NE(error.find("is not a Datum"), std::string::npos) << error;
}

}  // namespace cortado::test
