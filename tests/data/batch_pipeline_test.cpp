// batch_pipeline_test.cpp — the BatchPipeline's promises: batches independent of the number of worker
// threads, each shuffled epoch a permutation of every record, a pipeline started at position p
// continuing another exactly, shards that partition the stream, loader errors rethrown, and the same
// batches when they are loaded in the caller's thread.
#include <algorithm>
#include <mutex>
#include <set>
#include <thread>

#include "cortado/batch_pipeline.hpp"
#include "cortado/error.hpp"
#include "test_util.hpp"

namespace cortado::test {

namespace {

// Record i becomes {i, two draws of its generator}, label i % 7; record `fail_at` throws.
class FakeLoader : public RecordLoader {
 public:
  explicit FakeLoader(uint64_t n, int64_t fail_at = -1) : n_(n), fail_at_(fail_at) {}
  uint64_t num_records() const override { return n_; }
  void PrepareWorkers(int count) override { workers_ = count; }
  void Load(uint64_t index, int worker, float* out, float* label, RecordRng& rng) override {
    EXPECT_LT(worker, workers_);
    if (static_cast<int64_t>(index) == fail_at_) Fail("record ", index, " is corrupt");
    out[0] = static_cast<float>(index);
    out[1] = static_cast<float>(rng() % 1000);
    out[2] = static_cast<float>(rng() % 1000);
    if (label) *label = static_cast<float>(index % 7);
  }

 private:
  uint64_t n_;
  int64_t fail_at_;
  int workers_ = 0;
};

PipelineOptions Options(int threads, bool shuffle = false, uint64_t start = 0) {
  PipelineOptions options;
  options.owner = "test";
  options.batch_size = 5;
  options.item_count = 3;
  options.has_label = true;
  options.prefetch = 3;
  options.threads = threads;
  options.shuffle = shuffle;
  options.seed = 99;
  options.start_position = start;
  return options;
}

// `batches` batches, data then label, concatenated.
std::vector<float> RunPipeline(RecordLoader& loader, const PipelineOptions& options, int batches) {
  BatchPipeline pipeline(loader, options);
  std::vector<float> all, data(options.batch_size * options.item_count), label(options.batch_size);
  for (int b = 0; b < batches; ++b) {
    pipeline.Next(data.data(), label.data());
    all.insert(all.end(), data.begin(), data.end());
    all.insert(all.end(), label.begin(), label.end());
  }
  EXPECT_EQ(pipeline.position(),
            options.start_position + uint64_t(batches) * options.batch_size * options.shard_count);
  return all;
}

// The record index of each item in a Run's output.
std::vector<int> Records(const std::vector<float>& run, int batch, int item) {
  std::vector<int> records;
  for (size_t start = 0; start < run.size(); start += batch * item + batch)
    for (int i = 0; i < batch; ++i) records.push_back(static_cast<int>(run[start + i * item]));
  return records;
}

}  // namespace

TEST(BatchPipeline, BatchesDoNotDependOnTheNumberOfThreads) {
  FakeLoader loader(23);
  for (bool shuffle : {false, true}) {
    const auto one = RunPipeline(loader, Options(1, shuffle), 20);
    for (int threads : {2, 3, 8}) EXPECT_EQ(RunPipeline(loader, Options(threads, shuffle), 20), one) << threads;
  }
}

TEST(BatchPipeline, RecordsComeInOrderWrappingAtTheEnd) {
  FakeLoader loader(7);
  const auto records = Records(RunPipeline(loader, Options(2), 3), 5, 3);
  const std::vector<int> expected = {0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0};
  EXPECT_EQ(records, expected);
}

TEST(BatchPipeline, EachShuffledEpochIsAPermutationAndEpochsDiffer) {
  FakeLoader loader(10);
  const auto records = Records(RunPipeline(loader, Options(3, true), 6), 5, 3);  // three epochs of 10
  std::vector<std::vector<int>> epochs;
  for (int e = 0; e < 3; ++e) {
    std::vector<int> epoch(records.begin() + e * 10, records.begin() + (e + 1) * 10);
    std::vector<int> sorted = epoch;
    std::sort(sorted.begin(), sorted.end());
    for (int i = 0; i < 10; ++i) EXPECT_EQ(sorted[i], i) << "epoch " << e;
    epochs.push_back(epoch);
  }
  EXPECT_NE(epochs[0], epochs[1]);
  EXPECT_NE(epochs[1], epochs[2]);
  PipelineOptions other_seed = Options(3, true);
  other_seed.seed = 100;
  EXPECT_NE(Records(RunPipeline(loader, other_seed, 2), 5, 3), std::vector<int>(records.begin(), records.begin() + 10));
}

TEST(BatchPipeline, StartingAtAPositionContinuesAnotherRunExactly) {
  FakeLoader loader(13);
  for (bool shuffle : {false, true}) {
    const auto whole = RunPipeline(loader, Options(2, shuffle), 12);
    const auto tail = RunPipeline(loader, Options(3, shuffle, 7 * 5), 5);  // batches 7..11
    const size_t per_batch = 5 * 3 + 5;
    EXPECT_EQ(tail, std::vector<float>(whole.begin() + 7 * per_batch, whole.end())) << shuffle;
  }
}

// Rank r of 2 with batch 5 takes records [10k + 5r, 10k + 5r + 5) of the stream one pipeline with
// batch 10 reads, shuffled epochs, transform seeds and a start position (resume) included.
TEST(BatchPipeline, ShardsTakeBlocksOfTheDoubleBatch) {
  FakeLoader loader(11);
  for (uint64_t start : {uint64_t{0}, uint64_t{7}}) {
    PipelineOptions one = Options(2, true, start);
    one.batch_size = 10;
    const auto whole = Records(RunPipeline(loader, one, 3), 10, 3);  // 30 records
    ASSERT_EQ(whole.size(), 30u);
    std::vector<std::vector<int>> shards;
    for (int rank = 0; rank < 2; ++rank) {
      PipelineOptions options = Options(2, true, start);
      options.shard_index = rank;
      options.shard_count = 2;
      BatchPipeline pipeline(loader, options);
      std::vector<float> data(15), label(5), records;
      for (int b = 0; b < 3; ++b) {
        pipeline.Next(data.data(), label.data());
        records.insert(records.end(), data.begin(), data.end());
        records.insert(records.end(), label.begin(), label.end());
        EXPECT_EQ(pipeline.position(), start + 10 * (b + 1)) << "positions count the global stream";
      }
      shards.push_back(Records(records, 5, 3));
    }
    for (int i = 0; i < 30; ++i) EXPECT_EQ(shards[(i % 10) / 5][i / 10 * 5 + i % 5], whole[i]) << i;
  }
}

// The fuzz harnesses' mode (LoadBatchesInCallerThread): Next loads each batch in the caller's thread,
// and the batches are those the threads load, shuffled epochs, shards and a start position included;
// a loader error is rethrown as it is with threads.
TEST(BatchPipeline, LoadingInTheCallersThreadGivesTheSameBatches) {
  class ThreadRecordingLoader : public FakeLoader {
   public:
    using FakeLoader::FakeLoader;
    void Load(uint64_t index, int worker, float* out, float* label, RecordRng& rng) override {
      {
        std::lock_guard<std::mutex> lock(mutex);
        threads.insert(std::this_thread::get_id());
      }
      FakeLoader::Load(index, worker, out, label, rng);
    }
    std::mutex mutex;
    std::set<std::thread::id> threads;
  };
  struct InCallerThread {  // on for this scope, off again however the scope ends
    InCallerThread() { LoadBatchesInCallerThread(true); }
    ~InCallerThread() { LoadBatchesInCallerThread(false); }
  };
  for (bool shuffle : {false, true}) {
    for (uint64_t start : {uint64_t{0}, uint64_t{7}}) {
      for (int rank = 0; rank < 2; ++rank) {
        PipelineOptions options = Options(3, shuffle, start);
        options.shard_index = rank;
        options.shard_count = 2;
        ThreadRecordingLoader threaded_loader(13), caller_loader(13);
        const auto threaded = RunPipeline(threaded_loader, options, 9);
        std::vector<float> in_caller;
        {
          InCallerThread scope;
          in_caller = RunPipeline(caller_loader, options, 9);
        }
        EXPECT_EQ(in_caller, threaded) << "shuffle " << shuffle << ", start " << start << ", rank " << rank;
        EXPECT_EQ(caller_loader.threads, std::set<std::thread::id>{std::this_thread::get_id()});
        EXPECT_EQ(threaded_loader.threads.count(std::this_thread::get_id()), 0u) << "the workers load";
      }
    }
  }
  FakeLoader failing(9, /*fail_at=*/6);
  InCallerThread scope;
  BatchPipeline pipeline(failing, Options(2));
  std::vector<float> data(15), label(5);
  EXPECT_NO_THROW(pipeline.Next(data.data(), label.data()));  // records 0..4
  const std::string error = ErrorOf([&] { pipeline.Next(data.data(), label.data()); });
  EXPECT_NE(error.find("record 6 is corrupt"), std::string::npos) << error;
  EXPECT_FALSE(ErrorOf([&] { pipeline.Next(data.data(), label.data()); }).empty()) << "stays failed";
}

TEST(BatchPipeline, LoaderErrorsAreRethrownByNext) {
  FakeLoader loader(9, /*fail_at=*/6);
  BatchPipeline pipeline(loader, Options(2));
  std::vector<float> data(15), label(5);
  EXPECT_NO_THROW(pipeline.Next(data.data(), label.data()));  // records 0..4
  const std::string error = ErrorOf([&] { pipeline.Next(data.data(), label.data()); });
  EXPECT_NE(error.find("record 6 is corrupt"), std::string::npos) << error;
  EXPECT_FALSE(ErrorOf([&] { pipeline.Next(data.data(), label.data()); }).empty()) << "stays failed";
}

TEST(BatchPipeline, RecordSeedsDifferAcrossNeighboursAndSeeds) {
  std::set<uint32_t> seen;
  for (uint64_t g = 0; g < 1000; ++g) seen.insert(RecordSeed(1, g));
  for (uint64_t g = 0; g < 1000; ++g) seen.insert(RecordSeed(2, g));
  EXPECT_EQ(seen.size(), 2000u);
}

}  // namespace cortado::test
