// kernels/channel_sums.hpp — how the GPU's per-channel sums split their work (BatchNorm's statistics,
// Scale's and Bias's parameter gradients, PReLU's slope gradient; kernels in cuda/channel_sums.cuh),
// so that a layer's Reshape sizes its scratch exactly as the launcher will use it. Over
// (num, channels, spatial), each channel's m = num · spatial values are cut into `chunks` pieces of
// one block each, so that a few channels still fill the GPU; every block stores its sums (doubles) in
// the scratch, and a small kernel then adds each channel's partial sums in a fixed order (no atomics:
// the same inputs give the same bits, eagerly and in a CUDA graph). Also the simplest term of such sums,
// SumOfValues, over any storage type. No CUDA types.
#pragma once

#include <algorithm>
#include <cstdint>

#include "cortado/kernels/for_each.hpp"  // CORTADO_HOST_DEVICE, ToFloat

namespace cortado {

// The grid the sums aim at (an H100 holds 132 SMs × 8 blocks of 256 threads), and the fewest values
// a chunk takes (16 per thread), so that a small channel stays one block.
constexpr int64_t kChannelSumBlocks = 1024;
constexpr int64_t kChannelSumMinChunk = 4096;

// Chunks per channel: ceil(kChannelSumBlocks / channels), at most ceil(m / kChannelSumMinChunk),
// at least 1. Depends on the shape only, never on the device, so every GPU sums in the same order.
inline int64_t ChannelSumChunks(int64_t num, int64_t channels, int64_t spatial) {
  const int64_t wanted = (kChannelSumBlocks + channels - 1) / std::max<int64_t>(channels, 1);
  const int64_t most = (num * spatial + kChannelSumMinChunk - 1) / kChannelSumMinChunk;
  return std::max<int64_t>(1, std::min(wanted, most));
}

// The simplest term of the sums (kernels/for_each.hpp's ChannelSums, row_sums.hpp's RowSums): Σx over
// each channel or row, BatchNorm's and MVN's means, x of storage type T (float, BFloat16 or Float16)
// read as float. SumOfValues{x} takes T from x.
template <typename T>
struct SumOfValues {
  static constexpr int kSums = 1;
  const T* x;
  CORTADO_HOST_DEVICE void operator()(int64_t i, int64_t, double* sum) const { sum[0] += ToFloat(x[i]); }
};
template <typename T>
SumOfValues(const T*) -> SumOfValues<T>;

// Floats of scratch for `sums` sums per channel: a double per (sum, channel, chunk).
inline int ChannelSumScratchFloats(int64_t num, int64_t channels, int64_t spatial, int sums) {
  return static_cast<int>(2 * sums * channels * ChannelSumChunks(num, channels, spatial));
}

}  // namespace cortado
