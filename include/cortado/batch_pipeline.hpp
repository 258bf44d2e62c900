// batch_pipeline.hpp — the prefetch pipeline every data layer shares, so the step never waits for data.
//
// A scheduler thread decides which record fills each place of the coming batches; worker threads load
// and transform records (parse, decode, crop, mirror, scale) straight into a ring of `prefetch`
// preallocated host batches (pinned when a GPU is present); the consumer takes finished batches in
// order. Nothing is allocated per batch.
//
// Stream positions. The stream is global: record g (0, 1, 2, …) is epoch g / n, place g mod n of that
// epoch's order — the records' own order, or, with shuffle, a permutation drawn from (seed, epoch).
// Record g's random transform draws come from a generator seeded by (seed, g). Shard r of N (a rank of
// data-parallel training) takes, of every N·batch_size consecutive records, the block
// [r·batch_size, (r+1)·batch_size): together the shards read exactly what one pipeline with batch
// N·batch_size reads. A position counts records of the global stream (every shard's), so batch order
// and contents depend neither on the number of threads nor on the split into shards, and a pipeline
// started at position p continues exactly where another one stood (exact resume).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace cortado {

// The generator of one record's random transforms (crop offsets, mirror): SplitMix64, seeded per
// record by (pipeline seed, global index) through RecordSeed. It costs nothing to seed, where a
// std::mt19937 (624 words of state) takes ~1.2 µs — more than the rest of an MNIST record's work.
class RecordRng {
 public:
  using result_type = uint32_t;
  explicit RecordRng(uint64_t seed) : state_(seed) {}
  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return UINT32_MAX; }
  result_type operator()() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return static_cast<result_type>((z ^ (z >> 31)) >> 32);
  }
  bool operator==(const RecordRng& other) const { return state_ == other.state_; }

 private:
  uint64_t state_;
};

// What a data layer supplies: how many records there are and how to turn one into floats.
class RecordLoader {
 public:
  virtual ~RecordLoader() = default;
  virtual uint64_t num_records() const = 0;
  // Called once before the workers start, with their number: the loader makes per-worker scratch
  // (a Datum, decode buffers) so Load allocates nothing in steady state.
  virtual void PrepareWorkers(int count) {}
  // Loads record `index` (in [0, num_records)) as item floats into `out` and, when label is not null,
  // its label. `worker` is the calling worker's number; `rng` is seeded for this record. Throws Error.
  virtual void Load(uint64_t index, int worker, float* out, float* label, RecordRng& rng) = 0;
};

struct PipelineOptions {
  std::string owner;           // error-message prefix: "layer data (Data)"
  int batch_size = 1;
  int item_count = 1;          // floats per record
  bool has_label = false;
  int prefetch = 4;            // batches in the ring
  int threads = 1;             // worker threads (≥ 1)
  bool shuffle = false;        // a new seeded permutation of the records each epoch
  uint64_t seed = 0;           // of shuffles and per-record transforms
  uint64_t start_position = 0; // the global stream position of the first batch (of every shard)
  int shard_index = 0;         // this rank …
  int shard_count = 1;         // … of this many, each taking its block of batch_size records
};

// The transform seed of the record at global index g.
uint64_t RecordSeed(uint64_t seed, uint64_t global_index);
// The default number of worker threads: the cores, at most 8.
int DefaultDataThreads();
// Process-wide: the pipelines started after this call (with on = true) start no threads and load each
// batch in the thread that calls Next, just before handing it out, so that what a process does for
// an input is the same each time (the fuzz harnesses, fuzz/README.md). Batches are the same either
// way; only the overlap with the caller's work is lost.
void LoadBatchesInCallerThread(bool on);

class BatchPipeline {
 public:
  // Starts the scheduler and the workers. `loader` must outlive the pipeline.
  BatchPipeline(RecordLoader& loader, const PipelineOptions& options);
  ~BatchPipeline();  // stops and joins every thread, even while they wait
  BatchPipeline(const BatchPipeline&) = delete;
  BatchPipeline& operator=(const BatchPipeline&) = delete;

  // Waits for the next batch and copies it out (label may be null); returns the seconds spent waiting.
  // A loader's error is rethrown here.
  double Next(float* data, float* label);
  // The global stream position of the next batch Next hands out (of every shard: a shard's batches
  // advance it by shard_count·batch_size).
  uint64_t position() const { return position_; }

 private:
  struct Slot;
  struct Task {
    Slot* slot;
    int begin, end;  // items of the slot's batch
  };

  void ChooseRecords(Slot& slot, uint64_t block);  // the records of the batch starting at global index block
  void LoadItems(Slot& slot, int begin, int end, int worker);  // a loader error goes to slot.error
  void Schedule();        // the scheduler thread
  void Work(int worker);  // a worker thread
  void FillOrder(uint64_t epoch);

  RecordLoader& loader_;
  PipelineOptions options_;
  uint64_t num_records_;
  std::vector<std::unique_ptr<Slot>> ring_;
  std::vector<uint32_t> order_;  // this epoch's permutation when shuffling (scheduler only)
  uint64_t order_epoch_ = UINT64_MAX;

  std::mutex mutex_;
  std::condition_variable slot_freed_, work_ready_, slot_done_;
  std::vector<Task> tasks_;  // a ring of pending tasks, capacity prefetch · tasks per batch
  size_t task_head_ = 0, task_count_ = 0;
  int tasks_per_batch_;
  bool stop_ = false;

  uint64_t position_;
  uint64_t consumed_batches_ = 0;
  const bool in_caller_thread_;  // LoadBatchesInCallerThread, as it was at the start
  std::thread scheduler_;
  std::vector<std::thread> workers_;
};

}  // namespace cortado
