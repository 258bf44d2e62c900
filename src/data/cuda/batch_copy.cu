// batch_copy.cu — BatchUploader: pinned staging buffers copied to a GPU net's tops on the context's
// copy stream, the compute stream ordered after the copy by an event (data.hpp).
#include <cuda_runtime.h>
#include <glog/logging.h>

#include <algorithm>
#include <vector>

#include "cortado/cuda/resources.hpp"  // cuda::Resources, cuda::Event, CORTADO_CUDA_CHECK
#include "cortado/data.hpp"            // BatchUploader
#include "cortado/gpu.hpp"             // HostAllocate, HostFree

namespace cortado {

struct BatchUploader::State {
  explicit State(Context& context) : ctx(context) {}
  Context& ctx;
  std::vector<int64_t> floats;
  std::vector<float*> host;
  std::vector<bool> pinned;
  cuda::Event compute_done;  // the compute stream's work queued before the copy (may read the old batch)
  cuda::Event copied;        // the copy's end: the compute stream waits on it, Stage() on the host
  bool in_flight = false;    // an Upload whose copy Stage() has not yet waited for
};

BatchUploader::BatchUploader(Context& ctx, const std::vector<int64_t>& floats) {
  CORTADO_CUDA_CHECK(cudaSetDevice(cuda::Resources(ctx).device));  // the events belong to the context's GPU
  state_ = std::make_unique<State>(ctx);
  state_->floats = floats;
  for (int64_t n : floats) {
    bool pinned = false;
    state_->host.push_back(static_cast<float*>(HostAllocate(std::max<int64_t>(n, 1) * sizeof(float), &pinned)));
    state_->pinned.push_back(pinned);
  }
}

BatchUploader::~BatchUploader() {
  if (state_->in_flight) cudaEventSynchronize(state_->copied.get());  // errors ignored: may run while unwinding
  for (size_t i = 0; i < state_->host.size(); ++i) HostFree(state_->host[i], state_->pinned[i]);
}

const std::vector<float*>& BatchUploader::Stage() {
  if (state_->in_flight) {
    CORTADO_CUDA_CHECK(cudaEventSynchronize(state_->copied.get()));
    state_->in_flight = false;
  }
  return state_->host;
}

void BatchUploader::Upload(const std::vector<float*>& device) {
  CHECK_EQ(device.size(), state_->host.size()) << "BatchUploader: one device buffer per staging buffer";
  CHECK(!state_->in_flight) << "BatchUploader: Upload without Stage";
  GpuResources& gpu = cuda::Resources(state_->ctx);
  CORTADO_CUDA_CHECK(cudaEventRecord(state_->compute_done.get(), gpu.compute));
  CORTADO_CUDA_CHECK(cudaStreamWaitEvent(gpu.copy, state_->compute_done.get(), 0));
  for (size_t i = 0; i < device.size(); ++i) {
    if (state_->floats[i] == 0) continue;
    CORTADO_CUDA_CHECK(cudaMemcpyAsync(device[i], state_->host[i], state_->floats[i] * sizeof(float),
                                       cudaMemcpyHostToDevice, gpu.copy));
  }
  CORTADO_CUDA_CHECK(cudaEventRecord(state_->copied.get(), gpu.copy));
  CORTADO_CUDA_CHECK(cudaStreamWaitEvent(gpu.compute, state_->copied.get(), 0));
  state_->in_flight = true;
}

}  // namespace cortado
