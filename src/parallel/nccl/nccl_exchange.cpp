// nccl_exchange.cpp — the GPU gradient exchange (parallel.hpp): NCCL all-reduces (ncclAvg: the sum
// divided by the number of ranks) on a communication stream of its own. A bucket's all-reduce waits
// for an event recorded on the compute stream when backward has produced it, so it runs while the
// compute stream goes on with the layers before; Finish makes the compute stream wait for the last.
// Only stream work is queued, so a training step with the exchange can still be captured as a CUDA
// graph (NCCL supports stream capture). The communicator is set up from a unique id that rank 0 makes
// and broadcasts over the Ranks (MPI, or memory for threads).
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <mutex>
#include <set>

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
  }

  ~NcclExchange() override {
    if (stream_ != nullptr) {
      cudaStreamSynchronize(stream_);  // errors ignored: may run while unwinding
      cudaStreamDestroy(stream_);
    }
    std::lock_guard<std::mutex> lock(g_live_mutex);
    if (g_live.erase(comm_) > 0) ncclCommDestroy(comm_);
  }

 protected:
  void Start(const Bucket& bucket) override {
    CORTADO_CUDA_CHECK(cudaEventRecord(produced_.get(), compute_));
    CORTADO_CUDA_CHECK(cudaStreamWaitEvent(stream_, produced_.get(), 0));
    float* values = diff_ + bucket.offset;
    CheckNccl(ncclAllReduce(values, values, static_cast<size_t>(bucket.count), ncclFloat, ncclAvg, comm_, stream_),
              "ncclAllReduce");
  }

  void WaitAll() override {
    CORTADO_CUDA_CHECK(cudaEventRecord(averaged_.get(), stream_));
    CORTADO_CUDA_CHECK(cudaStreamWaitEvent(compute_, averaged_.get(), 0));
  }

 private:
  cudaStream_t compute_;
  cudaStream_t stream_ = nullptr;
  ncclComm_t comm_ = nullptr;
  cuda::Event produced_, averaged_;
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
