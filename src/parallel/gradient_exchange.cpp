// gradient_exchange.cpp — GradientExchange (parallel.hpp): the buckets of the flat gradient buffer and
// when each is ready, and the CPU exchange: a communication thread that sums each bucket over the
// ranks (Ranks::SumFloatsOnHost, MPI_Allreduce) and divides it by their number while the solver's
// thread goes on with backward.
#include <algorithm>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <thread>

#include "cortado/context.hpp"
#include "cortado/error.hpp"
#include "cortado/net.hpp"
#include "cortado/parallel.hpp"

namespace cortado {

std::vector<GradientExchange::Bucket> GradientExchange::PlanBuckets(Net& net, size_t bucket_bytes) {
  const std::vector<Blob*>& params = net.learnable_params();
  // The first layer (in forward order) whose blob is each parameter: its gradient is complete once
  // that layer's backward has run. Shared parameters are the same memory in every layer using them.
  std::map<const float*, int> param_of_diff;
  for (size_t p = 0; p < params.size(); ++p) param_of_diff[params[p]->diff()] = static_cast<int>(p);
  std::vector<int> first_layer(params.size(), 0);
  std::vector<bool> seen(params.size(), false);
  for (size_t i = 0; i < net.layers().size(); ++i) {
    for (const auto& blob : net.layers()[i]->blobs()) {
      auto it = param_of_diff.find(blob->diff());
      if (it == param_of_diff.end() || seen[it->second]) continue;
      seen[it->second] = true;
      first_layer[it->second] = static_cast<int>(i);
    }
  }
  const float* base = net.param_diff();
  std::vector<Bucket> buckets;
  const int64_t most = std::max<int64_t>(static_cast<int64_t>(bucket_bytes / sizeof(float)), 1);
  int64_t end = 0;  // of the bucket being filled, from its last parameter
  for (int p = static_cast<int>(params.size()) - 1; p >= 0; --p) {
    const int64_t offset = params[p]->diff() - base;
    if (buckets.empty() || end - buckets.back().offset >= most) {
      end = offset + params[p]->count();
      buckets.push_back({offset, 0, INT_MAX});
    }
    Bucket& bucket = buckets.back();
    bucket.offset = offset;
    bucket.count = end - offset;
    bucket.ready_after = std::min(bucket.ready_after, first_layer[p]);
  }
  return buckets;
}

GradientExchange::GradientExchange(Ranks& ranks, Net& net, size_t bucket_bytes)
    : ranks_(ranks), diff_(net.param_diff()), buckets_(PlanBuckets(net, bucket_bytes)) {}

GradientExchange::~GradientExchange() = default;

void GradientExchange::LayerDone(int layer) {
  while (next_ < buckets_.size() && buckets_[next_].ready_after >= layer) Start(buckets_[next_++]);
}

void GradientExchange::Finish() {
  while (next_ < buckets_.size()) Start(buckets_[next_++]);
  const auto start = std::chrono::steady_clock::now();
  WaitAll();
  wait_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  next_ = 0;
}

namespace {

// CPU ranks: the buckets go, in the order they were started, to a thread that sums them over the
// ranks in place and divides by their number.
class HostExchange final : public GradientExchange {
 public:
  HostExchange(Ranks& ranks, Net& net, size_t bucket_bytes)
      : GradientExchange(ranks, net, bucket_bytes),
        queue_(static_cast<size_t>(std::max(num_buckets(), 1))),
        thread_([this] { Run(); }) {}

  ~HostExchange() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }

 protected:
  void Start(const Bucket& bucket) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_[(head_ + pending_) % queue_.size()] = bucket;  // at most every bucket is pending
      ++pending_;
    }
    changed_.notify_all();
  }

  void WaitAll() override {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [this] { return pending_ == 0; });
    if (error_) {
      std::exception_ptr error = error_;
      error_ = nullptr;
      std::rethrow_exception(error);
    }
  }

 private:
  void Run() {
    const float scale = 1.0f / static_cast<float>(ranks_.size());
    for (;;) {
      Bucket bucket{};
      bool failed = false;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [this] { return stop_ || taken_ < pending_; });
        if (stop_) return;
        bucket = queue_[(head_ + taken_++) % queue_.size()];
        failed = error_ != nullptr;
      }
      try {
        if (!failed) {  // after a failure the rest is only counted off, so WaitAll can report it
          float* values = diff_ + bucket.offset;
          ranks_.SumFloatsOnHost(values, bucket.count);
          for (int64_t i = 0; i < bucket.count; ++i) values[i] *= scale;
        }
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex_);
        error_ = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lock(mutex_);
        head_ = (head_ + 1) % queue_.size();
        --taken_;
        --pending_;
      }
      changed_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Bucket> queue_;  // a ring: pending_ buckets from head_, the first taken_ of them being summed
  size_t head_ = 0;
  int pending_ = 0, taken_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;  // last: starts once the members above exist
};

}  // namespace

std::unique_ptr<GradientExchange> GradientExchange::Create(Ranks& ranks, Context& ctx, Net& net,
                                                           size_t bucket_bytes) {
  if (ctx.device() == Device::kGPU) return CreateNcclExchange(ranks, ctx, net, bucket_bytes);
  return std::make_unique<HostExchange>(ranks, net, bucket_bytes);
}

}  // namespace cortado
