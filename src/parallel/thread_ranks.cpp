// thread_ranks.cpp — ThreadRanksGroup (parallel.hpp): the ranks of one process, one per thread
// (trainer train --gpu=0,1), whose collectives meet in memory. Each collective is: publish a pointer,
// wait for every rank, read the others', wait again (so no rank changes its buffer while another still
// reads it). Sums add the ranks in rank order, so every rank gets the same bits.
#include <condition_variable>
#include <algorithm>
#include <cstring>
#include <mutex>

#include "cortado/error.hpp"
#include "cortado/parallel.hpp"

namespace cortado {

struct ThreadRanksGroup::Shared {
  explicit Shared(int size) : size(size), slots(size, nullptr) {}

  // Blocks until every rank has arrived; throws once a rank has aborted.
  void Meet() {
    std::unique_lock<std::mutex> lock(mutex);
    if (aborted) Fail("another rank of this run failed");
    const uint64_t generation = generation_;
    if (++arrived == size) {
      arrived = 0;
      ++generation_;
      met.notify_all();
      return;
    }
    met.wait(lock, [&] { return generation_ != generation || aborted; });
    if (aborted) Fail("another rank of this run failed");
  }

  void Abort() {
    std::lock_guard<std::mutex> lock(mutex);
    aborted = true;
    met.notify_all();
  }

  const int size;
  std::vector<const void*> slots;  // each rank's published buffer during a collective
  std::mutex mutex;
  std::condition_variable met;
  int arrived = 0;
  uint64_t generation_ = 0;
  bool aborted = false;
};

namespace {

class ThreadRanks final : public Ranks {
 public:
  ThreadRanks(std::shared_ptr<ThreadRanksGroup::Shared> shared, int rank) : shared_(std::move(shared)) {
    rank_ = local_rank_ = rank;
    size_ = local_size_ = shared_->size;
  }
  const char* kind() const override { return "threads"; }

  void SumOnHost(double* values, int count) override { Sum(values, count); }
  void SumFloatsOnHost(float* values, int64_t count) override { Sum(values, count); }

  void Broadcast(void* data, size_t bytes, int root) override {
    Publish(data);
    if (rank_ != root) std::memcpy(data, shared_->slots[root], bytes);
    shared_->Meet();
  }

  std::vector<std::string> GatherOnRoot(const std::string& value) override {
    Publish(&value);
    std::vector<std::string> all;
    if (rank_ == 0)
      for (const void* slot : shared_->slots) all.push_back(*static_cast<const std::string*>(slot));
    shared_->Meet();
    return all;
  }

  [[noreturn]] void Abort() override {
    shared_->Abort();
    Fail("this rank failed; the other ranks stop too");
  }

 private:
  void Publish(const void* data) {
    shared_->slots[rank_] = data;  // each rank writes only its own slot
    shared_->Meet();
  }

  template <typename T>
  void Sum(T* values, int64_t count) {
    Publish(values);
    if (sum_.size() < static_cast<size_t>(count)) sum_.resize(static_cast<size_t>(count));  // grows once
    std::fill(sum_.begin(), sum_.begin() + count, 0.0);
    for (int r = 0; r < size_; ++r) {
      const T* other = static_cast<const T*>(shared_->slots[r]);
      for (int64_t i = 0; i < count; ++i) sum_[i] += other[i];
    }
    shared_->Meet();  // every rank has read every buffer
    for (int64_t i = 0; i < count; ++i) values[i] = static_cast<T>(sum_[i]);
  }

  std::shared_ptr<ThreadRanksGroup::Shared> shared_;
  std::vector<double> sum_;  // the sums, in rank order, before they are written back
};

}  // namespace

ThreadRanksGroup::ThreadRanksGroup(int size) : shared_(std::make_shared<Shared>(size)) {
  CORTADO_REQUIRE(size > 0, "a group of ", size, " ranks");
}
ThreadRanksGroup::~ThreadRanksGroup() = default;

std::unique_ptr<Ranks> ThreadRanksGroup::Rank(int rank) { return std::make_unique<ThreadRanks>(shared_, rank); }

void ThreadRanksGroup::Abort() { shared_->Abort(); }

}  // namespace cortado
