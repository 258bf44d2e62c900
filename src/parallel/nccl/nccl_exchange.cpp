// nccl_exchange.cpp — the GPU gradient exchange (parallel.hpp): NCCL all-reduces (ncclAvg: the sum
// divided by the number of ranks) on a communication stream of its own. A bucket's all-reduce waits
// for an event recorded on the compute stream when backward has produced it, so it runs while the
// compute stream goes on with the layers before; Finish makes the compute stream wait for the last.
// Only stream work is queued, so a training step with the exchange can still be captured as a CUDA
// graph (NCCL supports stream capture). The communicator is set up from a unique id that rank 0 makes
// and broadcasts over the Ranks (MPI, or memory for threads). A watchdog thread polls the
// communicator's asynchronous error (a peer or the network failing, after NCCL's own timeouts) and
// aborts it at once, so that no wait on the GPU hangs on a dead exchange; the next bucket then throws.
#include <cuda_runtime.h>
#include <nccl.h>

#include <glog/logging.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "cortado/context.hpp"
#include "cortado/cuda/resources.hpp"
#include "cortado/error.hpp"
#include "cortado/net.hpp"
#include "cortado/parallel.hpp"

namespace cortado {

bool BuiltWithNccl() { return true; }

namespace {

void CheckNccl(ncclResult_t result, const char* what) {
  if (result != ncclSuccess && result != ncclInProgress) Fail("NCCL: ", what, " failed: ", ncclGetErrorString(result));
}

// The communicators alive in this process, so that AbortGpuExchanges can end them.
std::mutex g_live_mutex;
std::set<ncclComm_t> g_live;

class NcclExchange final : public GradientExchange {
 public:
  NcclExchange(Ranks& ranks, Context& ctx, Net& net, size_t bucket_bytes)
      : GradientExchange(ranks, net, bucket_bytes), compute_(cuda::Stream(ctx)) {
    CORTADO_CUDA_CHECK(cudaSetDevice(ctx.gpu_id()));
    ncclUniqueId id{};
    if (ranks.rank() == 0) CheckNccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    ranks.Broadcast(&id, sizeof id, 0);
    const ncclResult_t init = ncclCommInitRank(&comm_, ranks.size(), id, ranks.rank());
    if (init == ncclInvalidUsage)
      Fail("NCCL: ncclCommInitRank failed: ", ncclGetErrorString(init), " (GPU ", ctx.gpu_id(), " has another rank "
           "of this run? NCCL runs one rank per GPU)");
    CheckNccl(init, "ncclCommInitRank");
    {
      std::lock_guard<std::mutex> lock(g_live_mutex);
      g_live.insert(comm_);
    }
    CORTADO_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    watchdog_ = std::thread([this] { Watch(); });
  }

  ~NcclExchange() override {
    stop_ = true;
    watchdog_.join();
    if (stream_ != nullptr) {
      cudaStreamSynchronize(stream_);  // errors ignored: may run while unwinding
      cudaStreamDestroy(stream_);
    }
    std::lock_guard<std::mutex> lock(g_live_mutex);
    if (g_live.erase(comm_) > 0) ncclCommDestroy(comm_);
  }

 protected:
  void Start(const Bucket& bucket) override {
    CheckAlive();
    CORTADO_CUDA_CHECK(cudaEventRecord(produced_.get(), compute_));
    CORTADO_CUDA_CHECK(cudaStreamWaitEvent(stream_, produced_.get(), 0));
    float* values = diff_ + bucket.offset;
    CheckNccl(ncclAllReduce(values, values, static_cast<size_t>(bucket.count), ncclFloat, ncclAvg, comm_, stream_),
              "ncclAllReduce");
  }

  void WaitAll() override {
    CheckAlive();
    CORTADO_CUDA_CHECK(cudaEventRecord(averaged_.get(), stream_));
    CORTADO_CUDA_CHECK(cudaStreamWaitEvent(compute_, averaged_.get(), 0));
  }

 private:
  void Watch() {
    while (!stop_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      std::lock_guard<std::mutex> lock(g_live_mutex);
      if (g_live.count(comm_) == 0) return;  // aborted by AbortGpuExchanges
      ncclResult_t state = ncclSuccess;
      if (ncclCommGetAsyncError(comm_, &state) != ncclSuccess) state = ncclSystemError;
      if (state == ncclSuccess || state == ncclInProgress) continue;
      ncclCommAbort(comm_);
      g_live.erase(comm_);
      failure_ = std::string("NCCL: the gradient exchange failed: ") + ncclGetErrorString(state) +
                 " (another rank or the network between them); the communicator was aborted";
      LOG(ERROR) << failure_;
      failed_ = true;
      return;
    }
  }

  void CheckAlive() const {
    if (failed_) Fail(failure_);
  }

  cudaStream_t compute_;
  cudaStream_t stream_ = nullptr;
  ncclComm_t comm_ = nullptr;
  cuda::Event produced_, averaged_;
  std::atomic<bool> stop_{false}, failed_{false};
  std::string failure_;  // written before failed_ is set
  std::thread watchdog_;
};

}  // namespace

std::unique_ptr<GradientExchange> CreateNcclExchange(Ranks& ranks, Context& ctx, Net& net, size_t bucket_bytes) {
  return std::make_unique<NcclExchange>(ranks, ctx, net, bucket_bytes);
}

void AbortGpuExchanges() {
  std::lock_guard<std::mutex> lock(g_live_mutex);
  for (ncclComm_t comm : g_live) ncclCommAbort(comm);
  g_live.clear();
}

}  // namespace cortado
