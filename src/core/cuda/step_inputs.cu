// step_inputs.cu — StepInputs (step_inputs.hpp): a device block of kCapacity words, a page-locked
// ring of kRing host stagings, and one event per staging marking when its copy has finished.
#include <cuda_runtime.h>
#include <glog/logging.h>

#include <cstring>
#include <vector>

#include "cortado/cuda/resources.hpp"
#include "cortado/error.hpp"
#include "cortado/gpu.hpp"
#include "cortado/step_inputs.hpp"

namespace cortado {

struct StepInputs::State {
  uint64_t* device = nullptr;
  uint64_t* ring = nullptr;  // kRing × kCapacity words, page-locked
  std::vector<cudaEvent_t> copied;
  std::vector<bool> in_flight;
  std::vector<uint64_t> values;  // the words being set for the next Upload
  int used = 0;
  int next = 0;  // the staging the next Upload fills
};

StepInputs::StepInputs(int device) : state_(std::make_unique<State>()) {
  CORTADO_CUDA_CHECK(cudaSetDevice(device));
  state_->device = static_cast<uint64_t*>(GpuAllocate(kCapacity * sizeof(uint64_t)));
  CORTADO_CUDA_CHECK(cudaHostAlloc(&state_->ring, kRing * kCapacity * sizeof(uint64_t), cudaHostAllocDefault));
  state_->copied.resize(kRing, nullptr);
  state_->in_flight.resize(kRing, false);
  for (auto& event : state_->copied) CORTADO_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  state_->values.assign(kCapacity, 0);
}

// Ignores errors: it may run while an earlier CUDA error unwinds.
StepInputs::~StepInputs() {
  for (size_t i = 0; i < state_->copied.size(); ++i) {
    if (state_->copied[i] == nullptr) continue;
    if (state_->in_flight[i]) cudaEventSynchronize(state_->copied[i]);
    cudaEventDestroy(state_->copied[i]);
  }
  if (state_->ring != nullptr) cudaFreeHost(state_->ring);
  GpuFree(state_->device);
}

int StepInputs::Reserve() {
  CORTADO_REQUIRE(state_->used < kCapacity, "more than ", kCapacity, " per-step GPU values were reserved");
  return state_->used++;
}

void StepInputs::SetWord(int slot, uint64_t value) {
  CHECK(slot >= 0 && slot < state_->used) << "step input slot " << slot << " was not reserved";
  state_->values[slot] = value;
}

void StepInputs::SetFloat(int slot, float value) {
  uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  SetWord(slot, bits);
}

const uint64_t* StepInputs::device_word(int slot) const { return state_->device + slot; }

const float* StepInputs::device_float(int slot) const {
  return reinterpret_cast<const float*>(state_->device + slot);  // the low half of a little-endian word
}

void StepInputs::Upload(Context& ctx) {
  if (state_->used == 0) return;
  const int k = state_->next;
  state_->next = (k + 1) % kRing;
  if (state_->in_flight[k]) CORTADO_CUDA_CHECK(cudaEventSynchronize(state_->copied[k]));
  uint64_t* staging = state_->ring + static_cast<size_t>(k) * kCapacity;
  std::memcpy(staging, state_->values.data(), state_->used * sizeof(uint64_t));
  const cudaStream_t stream = cuda::Stream(ctx);
  CORTADO_CUDA_CHECK(cudaMemcpyAsync(state_->device, staging, state_->used * sizeof(uint64_t), cudaMemcpyHostToDevice,
                                     stream));
  CORTADO_CUDA_CHECK(cudaEventRecord(state_->copied[k], stream));
  state_->in_flight[k] = true;
}

StepInputs& StepInputsOf(Context& ctx) {
  return *cuda::Resources(ctx).step_inputs;
}

}  // namespace cortado
