// batch_pipeline.cpp — the scheduler, the workers and the ring of batches (see batch_pipeline.hpp).
//
// One mutex guards the slot states and the task ring. A slot goes free → loading (the scheduler has
// chosen its records and queued its tasks) → ready (its last task finished) → free (the consumer
// copied it out). Only the scheduler writes a free slot's record lists; only workers write a loading
// slot's floats; only the consumer reads a ready slot.
#include "cortado/batch_pipeline.hpp"

#include <glog/logging.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <numeric>

#include "cortado/error.hpp"
#include "cortado/gpu.hpp"

namespace cortado {

uint64_t RecordSeed(uint64_t seed, uint64_t global_index) {
  // SplitMix64 of the pair: neighbouring records get unrelated generators.
  uint64_t z = seed + (global_index + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

namespace {
std::atomic<bool> g_load_in_caller_thread{false};
}  // namespace

void LoadBatchesInCallerThread(bool on) { g_load_in_caller_thread = on; }

int DefaultDataThreads() {
  const unsigned cores = std::thread::hardware_concurrency();
  return static_cast<int>(std::clamp(cores, 1u, 8u));
}

namespace {

// Host floats from HostAllocate: pinned when a GPU is present.
class HostFloats {
 public:
  explicit HostFloats(size_t count) : count_(count) {
    data_ = static_cast<float*>(HostAllocate(std::max<size_t>(count, 1) * sizeof(float), &pinned_));
  }
  ~HostFloats() { HostFree(data_, pinned_); }
  HostFloats(const HostFloats&) = delete;
  HostFloats& operator=(const HostFloats&) = delete;
  float* data() { return data_; }
  size_t size() const { return count_; }

 private:
  float* data_;
  size_t count_;
  bool pinned_ = false;
};

}  // namespace

struct BatchPipeline::Slot {
  Slot(int batch, int item, bool has_label)
      : data(size_t(batch) * item), label(has_label ? batch : 0), record(batch), global(batch) {}
  enum State { kFree, kLoading, kReady } state = kFree;
  HostFloats data, label;
  std::vector<uint64_t> record;  // which record fills each place
  std::vector<uint64_t> global;  // its global stream index (seeds its transform)
  int pending = 0;               // tasks not yet finished
  std::string error;             // the first loader error in this batch
};

BatchPipeline::BatchPipeline(RecordLoader& loader, const PipelineOptions& options)
    : loader_(loader), options_(options), num_records_(loader.num_records()), position_(options.start_position),
      in_caller_thread_(g_load_in_caller_thread) {
  CORTADO_REQUIRE(num_records_ > 0, options_.owner, ": the dataset holds no records");
  CORTADO_REQUIRE(options_.batch_size > 0 && options_.prefetch > 0 && options_.threads > 0, options_.owner,
                  ": batch_size, prefetch and threads must be positive");
  CORTADO_REQUIRE(options_.shard_count > 0 && options_.shard_index >= 0 &&
                      options_.shard_index < options_.shard_count,
                  options_.owner, ": shard ", options_.shard_index, " of ", options_.shard_count, " is not valid");
  for (int i = 0; i < options_.prefetch; ++i)
    ring_.push_back(std::make_unique<Slot>(options_.batch_size, options_.item_count, options_.has_label));
  // A few tasks per worker and batch balance the load; each task is a run of items.
  tasks_per_batch_ = std::min(options_.batch_size, options_.threads * 4);
  tasks_.resize(size_t(tasks_per_batch_) * options_.prefetch);
  loader_.PrepareWorkers(options_.threads);
  if (in_caller_thread_) return;
  scheduler_ = std::thread([this] { Schedule(); });
  for (int w = 0; w < options_.threads; ++w) workers_.emplace_back([this, w] { Work(w); });
}

BatchPipeline::~BatchPipeline() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  slot_freed_.notify_all();
  work_ready_.notify_all();
  slot_done_.notify_all();
  if (scheduler_.joinable()) scheduler_.join();
  for (auto& worker : workers_) worker.join();
}

void BatchPipeline::FillOrder(uint64_t epoch) {
  if (epoch == order_epoch_) return;
  order_epoch_ = epoch;
  order_.resize(num_records_);
  std::iota(order_.begin(), order_.end(), 0u);
  std::mt19937_64 rng(options_.seed ^ (0xD1B54A32D192ED03ull * (epoch + 1)));
  std::shuffle(order_.begin(), order_.end(), rng);
}

void BatchPipeline::ChooseRecords(Slot& slot, uint64_t block) {
  for (int i = 0; i < options_.batch_size; ++i) {
    const uint64_t global = block + i;
    const uint64_t place = global % num_records_;
    if (place == 0 && global > 0) LOG(INFO) << "Restarting data prefetching from start.";
    if (options_.shuffle) FillOrder(global / num_records_);
    slot.record[i] = options_.shuffle ? order_[place] : place;
    slot.global[i] = global;
  }
}

void BatchPipeline::LoadItems(Slot& slot, int begin, int end, int worker) {
  const int item = options_.item_count;
  try {
    for (int i = begin; i < end; ++i) {
      RecordRng rng(RecordSeed(options_.seed, slot.global[i]));
      loader_.Load(slot.record[i], worker, slot.data.data() + size_t(i) * item,
                   options_.has_label ? slot.label.data() + i : nullptr, rng);
    }
  } catch (const std::exception& e) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (slot.error.empty()) slot.error = e.what();
  }
}

void BatchPipeline::Schedule() {
  // The global index of this shard's first record in the coming batch: shard r of N takes the r-th
  // block of batch_size records out of every N·batch_size.
  uint64_t block = options_.start_position + uint64_t(options_.shard_index) * options_.batch_size;
  for (uint64_t sequence = 0;; ++sequence, block += uint64_t(options_.batch_size) * options_.shard_count) {
    Slot& slot = *ring_[sequence % ring_.size()];
    {
      std::unique_lock<std::mutex> lock(mutex_);
      slot_freed_.wait(lock, [&] { return stop_ || slot.state == Slot::kFree; });
      if (stop_) return;
    }
    ChooseRecords(slot, block);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      slot.state = Slot::kLoading;
      slot.pending = tasks_per_batch_;
      for (int t = 0; t < tasks_per_batch_; ++t) {
        const int begin = int(int64_t(options_.batch_size) * t / tasks_per_batch_);
        const int end = int(int64_t(options_.batch_size) * (t + 1) / tasks_per_batch_);
        tasks_[(task_head_ + task_count_++) % tasks_.size()] = {&slot, begin, end};
      }
    }
    work_ready_.notify_all();
  }
}

void BatchPipeline::Work(int worker) {
  for (;;) {
    Task task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      work_ready_.wait(lock, [&] { return stop_ || task_count_ > 0; });
      if (stop_) return;
      task = tasks_[task_head_];
      task_head_ = (task_head_ + 1) % tasks_.size();
      --task_count_;
    }
    Slot& slot = *task.slot;
    LoadItems(slot, task.begin, task.end, worker);
    bool done;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done = --slot.pending == 0;
      if (done) slot.state = Slot::kReady;
    }
    if (done) slot_done_.notify_all();
  }
}

double BatchPipeline::Next(float* data, float* label) {
  Slot& slot = *ring_[consumed_batches_ % ring_.size()];
  const auto start = std::chrono::steady_clock::now();
  if (in_caller_thread_) {  // this batch's records, as the scheduler would choose them, loaded here
    ChooseRecords(slot, options_.start_position +
                            (consumed_batches_ * options_.shard_count + options_.shard_index) * options_.batch_size);
    LoadItems(slot, 0, options_.batch_size, 0);
    slot.state = Slot::kReady;
  }
  {
    std::unique_lock<std::mutex> lock(mutex_);
    slot_done_.wait(lock, [&] { return slot.state == Slot::kReady; });
    if (!slot.error.empty()) Fail(slot.error);  // the pipeline stays stopped at this batch
  }
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::copy(slot.data.data(), slot.data.data() + slot.data.size(), data);
  if (label != nullptr && options_.has_label)
    std::copy(slot.label.data(), slot.label.data() + slot.label.size(), label);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    slot.state = Slot::kFree;
  }
  slot_freed_.notify_one();
  ++consumed_batches_;
  position_ += uint64_t(options_.batch_size) * options_.shard_count;
  return waited;
}

}  // namespace cortado
