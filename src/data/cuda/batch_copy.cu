// batch_copy.cu — BatchUploader (batch_uploader.hpp): host batches to a GPU net's tops through kSlots pairs of
// staging buffers, pinned host → device slot on the context's copy stream, device slot → top on the
// compute stream, ordered by two events per slot, so that the copy of the next batch overlaps the
// current step and the host waits only for a slot's copy of kSlots Forwards ago.
#include <cuda_runtime.h>
#include <glog/logging.h>

#include <algorithm>
#include <array>
#include <vector>

#include "cortado/cuda/resources.hpp"  // cuda::Resources, cuda::Event, CORTADO_CUDA_CHECK
#include "cortado/data/batch_uploader.hpp"
#include "cortado/gpu.hpp"             // HostAllocate, HostFree

namespace cortado {

struct BatchUploader::State {
  explicit State(Context& context) : ctx(context) {}
  ~State();  // also when the constructor throws half-way
  Context& ctx;
  std::vector<int64_t> floats;  // per top
  struct Slot {
    std::vector<float*> host;   // pinned staging buffers, one per top
    std::vector<bool> pinned;   // for HostFree
    cuda::Event copied;         // copy stream: host → device slot done (Stage waits for it on the host)
    cuda::Event consumed;       // compute stream: device slot → top done (the next copy into the slot waits)
    bool copying = false;       // `copied` recorded and not yet waited for on the host
  };
  std::array<Slot, kSlots> slots;
  int next = 0;         // the slot of the next Upload
  bool staged = false;  // Stage() handed out slots[next] since the last Upload
};

std::shared_ptr<BatchUploader::State> BatchUploader::StartCopies(Context& ctx, const std::vector<int64_t>& floats) {
  CORTADO_CUDA_CHECK(cudaSetDevice(cuda::Resources(ctx).device));  // the events belong to the context's GPU
  auto state = std::make_shared<State>(ctx);
  state->floats = floats;
  for (State::Slot& slot : state->slots) {
    for (int64_t n : floats) {
      bool pinned = false;
      slot.host.push_back(static_cast<float*>(HostAllocate(std::max<int64_t>(n, 1) * sizeof(float), &pinned)));
      slot.pinned.push_back(pinned);
    }
  }
  return state;
}

BatchUploader::State::~State() {
  for (Slot& slot : slots) {
    if (slot.copying) cudaEventSynchronize(slot.copied.get());  // errors ignored: may run while unwinding
    for (size_t i = 0; i < slot.host.size(); ++i) HostFree(slot.host[i], slot.pinned[i]);
  }
}

BatchUploader::~BatchUploader() = default;

const std::vector<float*>& BatchUploader::Stage() {
  CHECK(state_) << "BatchUploader: Stage on a plan-only context";
  State::Slot& slot = state_->slots[state_->next];
  if (slot.copying) {  // the copy queued kSlots Forwards ago still reads these buffers
    CORTADO_CUDA_CHECK(cudaEventSynchronize(slot.copied.get()));
    slot.copying = false;
  }
  state_->staged = true;
  return slot.host;
}

void BatchUploader::Upload(const BlobVec& top) {
  CHECK(state_ && state_->staged) << "BatchUploader: Upload without Stage";
  CHECK_EQ(top.size(), state_->floats.size()) << "BatchUploader: one staging buffer per top";
  GpuResources& gpu = cuda::Resources(state_->ctx);
  State::Slot& slot = state_->slots[state_->next];
  const std::vector<Blob*>& device = staging_[state_->next];
  // Copy stream: once the compute stream has read the device slot's previous batch, host → device slot.
  CORTADO_CUDA_CHECK(cudaStreamWaitEvent(gpu.copy, slot.consumed.get(), 0));
  for (size_t i = 0; i < top.size(); ++i) {
    if (state_->floats[i] == 0) continue;
    CORTADO_CUDA_CHECK(cudaMemcpyAsync(device[i]->data(), slot.host[i], state_->floats[i] * sizeof(float),
                                       cudaMemcpyHostToDevice, gpu.copy));
  }
  CORTADO_CUDA_CHECK(cudaEventRecord(slot.copied.get(), gpu.copy));
  slot.copying = true;
  // Compute stream: after the step before (stream order) and the copy, device slot → top.
  CORTADO_CUDA_CHECK(cudaStreamWaitEvent(gpu.compute, slot.copied.get(), 0));
  for (size_t i = 0; i < top.size(); ++i) {
    if (state_->floats[i] == 0) continue;
    CORTADO_CUDA_CHECK(cudaMemcpyAsync(top[i]->data(), device[i]->data(), state_->floats[i] * sizeof(float),
                                       cudaMemcpyDeviceToDevice, gpu.compute));
  }
  CORTADO_CUDA_CHECK(cudaEventRecord(slot.consumed.get(), gpu.compute));
  state_->staged = false;
  state_->next = (state_->next + 1) % kSlots;
}

}  // namespace cortado
