// loss_sums.cuh — what the GPU losses that reduce over positions share (softmax_loss.cu, losses.cu,
// infogain_loss.cu; accuracy.cu reads labels the same way): the label as the CPU reads it, and a loss
// and a count summed in double in a fixed order, so the same inputs give the same loss. Each of
// kLossBlocks blocks stores its sums (StoreLossPartials), then one thread adds the partials in order,
// divides by the normalizer and writes the loss top (QueueLossFinish); the normalizer stays on the
// device for the backward pass. CUDA sources only.
//
// A loss's work buffer (floats; an arena region, so 64-byte aligned): kLossBlocks doubles of partial
// losses, kLossBlocks doubles of partial counts, the normalizer (a float) at kLossNormalizer, then
// the bad-label flag (the first bad position, unsigned; kNoBadLabel when none) at kLossFlag.
#pragma once

#include <cub/block/block_reduce.cuh>

#include <climits>

#include "cortado/cuda/resources.hpp"

namespace cortado::cuda {

constexpr int kLossBlocks = 128;
constexpr int kLossNormalizer = 4 * kLossBlocks;
constexpr int kLossFlag = kLossNormalizer + 1;
constexpr int kLossWorkUsed = kLossFlag + 1;  // floats of the work buffer the layout needs
constexpr unsigned kNoBadLabel = 0xffffffffu;

inline double* PartialLoss(float* work) { return reinterpret_cast<double*>(work); }
inline double* PartialCount(float* work) { return reinterpret_cast<double*>(work) + kLossBlocks; }
inline unsigned* LossFlag(float* work) { return reinterpret_cast<unsigned*>(work + kLossFlag); }

// static_cast<int>(v) as x86 does it: NaN and values outside int's range give INT_MIN.
__device__ __forceinline__ int LabelOf(float v) {
  return v >= -2147483648.0f && v < 2147483648.0f ? static_cast<int>(v) : INT_MIN;
}

// Thread 0 of each block stores the block's sums of `loss` and `count` in the partials.
__device__ inline void StoreLossPartials(double loss, double count, double* partial_loss, double* partial_count) {
  using Reduce = cub::BlockReduce<double, kThreads>;
  __shared__ typename Reduce::TempStorage storage;
  const double block_loss = Reduce(storage).Sum(loss);
  __syncthreads();  // the storage is reused
  const double block_count = Reduce(storage).Sum(count);
  if (threadIdx.x == 0) {
    partial_loss[blockIdx.x] = block_loss;
    partial_count[blockIdx.x] = block_count;
  }
}

// Queues *loss = Σ partial losses / n, n = max(Σ partial counts when by_count, else normalizer, 1),
// with n kept at work[kLossNormalizer] (losses.cu).
void QueueLossFinish(Context& ctx, float* work, bool by_count, double normalizer, float* loss);

}  // namespace cortado::cuda
