// channel_sums.cuh — per-channel sums over (num, channels, spatial), split into chunks as
// kernels/channel_sums.hpp describes: what BatchNorm, Scale, Bias and PReLU reduce with. CUDA sources
// only.
//
// QueueChannelSums(ctx, num, channels, spatial, scratch, term, finish) queues two kernels:
//  - channels · chunks blocks; block k · channels + c calls term(i, c, sum) for the element indices i
//    of chunk k of channel c, thread by thread in increasing order (term adds into sum[0 .. Term::kSums)), and
//    stores the block's totals (cub::BlockReduce, double) in the scratch;
//  - one warp per channel adds the channel's partials, chunk by chunk in a fixed order (strided over
//    the lanes, then cub::WarpReduce), and lane 0 calls finish(c, totals).
// The scratch holds ChannelSumScratchFloats(num, channels, spatial, Term::kSums) floats (an arena
// region: aligned for doubles). Nothing is allocated, and nothing is atomic.
#pragma once

#include <cub/block/block_reduce.cuh>
#include <cub/warp/warp_reduce.cuh>

#include "cortado/cuda/resources.hpp"  // cuda::Stream, kThreads, CORTADO_LAUNCH
#include "cortado/kernels/channel_sums.hpp"

namespace cortado::cuda {

// Where the chunks lie: value j (j < m = num · spatial) of channel c is element
// (j / spatial · channels + c) · spatial + j % spatial, and chunk k holds values [k · size, (k + 1) · size).
// From j to j + kThreads the spatial position moves by step_s and the element by `step`, plus `wrap`
// when the position runs into the next image (worked out once, on the host).
struct ChunkLayout {
  int64_t channels, spatial, m, chunks, size, step_s, step, wrap;
};

// At most 32 registers (launch bounds), so that eight blocks fit on an SM and the kChannelSumBlocks
// grid fills an H100 in one wave.
template <typename Term>
__global__ void __launch_bounds__(kThreads, 8) ChunkSumsKernel(ChunkLayout l, Term term, double* partial) {
  constexpr int kSums = Term::kSums;
  constexpr int kUnroll = 4;  // indices first, then the terms: four loads in flight per thread
  // Consecutive blocks take consecutive channels of one chunk, so blocks that run together read the
  // same rows: in a channels-last blob (spatial 1) those channels share cache lines, which the L2 then
  // serves once instead of once per channel.
  const unsigned channels = static_cast<unsigned>(l.channels);
  const int64_t c = blockIdx.x % channels, k = blockIdx.x / channels;
  // This thread's values: j, then every kThreads-th up to the chunk's end, `count` of them.
  const int64_t j = k * l.size + threadIdx.x;
  const int64_t end = min(l.m, (k + 1) * l.size);
  int count = j < end ? static_cast<int>((end - j + kThreads - 1) / kThreads) : 0;
  int64_t s = j % l.spatial;
  int64_t i = (j / l.spatial * l.channels + c) * l.spatial + s;
  auto advance = [&] {
    s += l.step_s;
    i += l.step;
    if (s >= l.spatial) {
      s -= l.spatial;
      i += l.wrap;
    }
  };
  double sum[kSums] = {};
  for (; count >= kUnroll; count -= kUnroll) {
    int64_t at[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      at[u] = i;
      advance();
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) term(at[u], c, sum);
  }
  for (; count > 0; --count) {
    term(i, c, sum);
    advance();
  }
  using Reduce = cub::BlockReduce<double, kThreads>;
  __shared__ typename Reduce::TempStorage storage;
#pragma unroll
  for (int q = 0; q < kSums; ++q) {
    const double total = Reduce(storage).Sum(sum[q]);
    if (threadIdx.x == 0) partial[(q * l.channels + c) * l.chunks + k] = total;
    __syncthreads();  // the storage is reused
  }
}

constexpr int kWarpsPerBlock = kThreads / 32;

template <int kSums, typename Finish>
__global__ void __launch_bounds__(kThreads) FinishChannelSumsKernel(int64_t channels, int64_t chunks,
                                                                    const double* partial, Finish finish) {
  using Reduce = cub::WarpReduce<double>;
  __shared__ typename Reduce::TempStorage storage[kWarpsPerBlock];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + warp;
  if (c >= channels) return;  // the whole warp
  double totals[kSums];
#pragma unroll
  for (int q = 0; q < kSums; ++q) {
    const double* p = partial + (q * channels + c) * chunks;
    double sum = 0;
    for (int64_t k = lane; k < chunks; k += 32) sum += p[k];
    totals[q] = Reduce(storage[warp]).Sum(sum);  // lane 0's is the total
    __syncwarp();                                // the storage is reused
  }
  if (lane == 0) finish(c, totals);
}

// Queues both kernels on the context's compute stream (nothing for zero channels; m = 0 gives zero
// totals).
template <typename Term, typename Finish>
void QueueChannelSums(Context& ctx, int64_t num, int64_t channels, int64_t spatial, float* scratch, Term term,
                      Finish finish) {
  if (channels == 0) return;
  ChunkLayout l;
  l.channels = channels;
  l.spatial = spatial > 0 ? spatial : 1;  // no values when 0
  l.m = num * spatial;
  l.chunks = ChannelSumChunks(num, channels, spatial);
  l.size = (l.m + l.chunks - 1) / l.chunks;
  l.step_s = kThreads % l.spatial;
  l.step = kThreads / l.spatial * channels * l.spatial + l.step_s;
  l.wrap = (channels - 1) * l.spatial;
  double* partial = reinterpret_cast<double*>(scratch);
  cudaStream_t stream = Stream(ctx);
  CORTADO_LAUNCH(ChunkSumsKernel<Term>, static_cast<unsigned>(channels * l.chunks), kThreads, 0, stream, l, term,
                 partial);
  CORTADO_LAUNCH((FinishChannelSumsKernel<Term::kSums, Finish>),
                 static_cast<unsigned>((channels + kWarpsPerBlock - 1) / kWarpsPerBlock), kThreads, 0, stream, channels,
                 l.chunks, partial, finish);
}

}  // namespace cortado::cuda
