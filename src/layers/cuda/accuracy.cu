// accuracy.cu — Accuracy's kernels (kernels/dense.hpp): one thread per labelled position ranks the
// true class exactly as accuracy.cpp does (ties count against it); hits and counts are integers,
// added with atomics, so the result does not depend on the order.
//
// work (AccuracyWorkFloats(channels) words, as unsigned integers): hits, counted positions, the
// bad-label flag, one unused word, then per class: hits, samples.
#include <cub/block/block_reduce.cuh>

#include "cortado/cuda/loss_sums.cuh"  // LabelOf
#include "cortado/cuda/resources.hpp"  // cuda::Stream, CORTADO_LAUNCH
#include "cortado/kernels/dense.hpp"

namespace cortado {

namespace {

constexpr int kHits = 0, kCounted = 1, kFlag = 2, kPerClass = 4;

using cuda::LabelOf;

__global__ void AccuracyCountKernel(int64_t positions, int64_t channels, int64_t inner, int top_k, bool has_ignore,
                                    int ignore_label, const float* x, const float* label, bool per_class,
                                    unsigned* work) {
  unsigned hits = 0, counted = 0;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < positions;
       p += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int l = LabelOf(label[p]);
    if (has_ignore && l == ignore_label) continue;
    if (l < 0 || l >= channels) {
      atomicMin(work + kFlag, static_cast<unsigned>(p));
      continue;
    }
    const int64_t i = p / inner, j = p % inner;
    const float* xij = x + i * channels * inner + j;
    const float truth = xij[l * inner];
    int at_least = -1;  // classes scoring >= the true one, the true class itself excluded
    for (int64_t c = 0; c < channels && at_least < top_k; ++c) at_least += xij[c * inner] >= truth;
    const unsigned hit = at_least < top_k ? 1u : 0u;
    hits += hit;
    ++counted;
    if (per_class) {
      atomicAdd(work + kPerClass + l, hit);
      atomicAdd(work + kPerClass + channels + l, 1u);
    }
  }
  using Reduce = cub::BlockReduce<unsigned, cuda::kThreads>;
  __shared__ typename Reduce::TempStorage storage;
  const unsigned block_hits = Reduce(storage).Sum(hits);
  __syncthreads();  // the storage is reused
  const unsigned block_counted = Reduce(storage).Sum(counted);
  if (threadIdx.x == 0) {
    if (block_hits > 0) atomicAdd(work + kHits, block_hits);
    if (block_counted > 0) atomicAdd(work + kCounted, block_counted);
  }
}

__global__ void AccuracyFinishKernel(int64_t channels, const unsigned* work, float* accuracy, float* per_class) {
  if (threadIdx.x == 0) {
    const unsigned counted = work[kCounted];
    *accuracy = counted == 0 ? 0.0f : static_cast<float>(work[kHits]) / static_cast<float>(counted);
  }
  if (per_class == nullptr) return;
  for (int64_t c = threadIdx.x; c < channels; c += blockDim.x) {
    const unsigned samples = work[kPerClass + channels + c];
    per_class[c] = samples == 0 ? 0.0f
                                : static_cast<float>(work[kPerClass + c]) / static_cast<float>(samples);
  }
}

}  // namespace

int64_t AccuracyForwardGpu(Context& ctx, int64_t outer, int64_t channels, int64_t inner, int top_k,
                           bool has_ignore, int ignore_label, const float* x, const float* label, float* work,
                           float* accuracy, float* per_class, float* bad_value_host) {
  const cudaStream_t stream = cuda::Stream(ctx);
  unsigned* counters = reinterpret_cast<unsigned*>(work);
  CORTADO_CUDA_CHECK(cudaMemsetAsync(counters, 0, AccuracyWorkFloats(channels) * sizeof(unsigned), stream));
  CORTADO_CUDA_CHECK(cudaMemsetAsync(counters + kFlag, 0xff, sizeof(unsigned), stream));
  const int64_t positions = outer * inner;
  CORTADO_LAUNCH(AccuracyCountKernel, cuda::BlocksFor(positions), cuda::kThreads, 0, stream, positions, channels, inner,
                 top_k, has_ignore, ignore_label, x, label, per_class != nullptr, counters);
  CORTADO_LAUNCH(AccuracyFinishKernel, 1, cuda::kThreads, 0, stream, channels, counters, accuracy, per_class);
  return FirstBadLabelGpu(ctx, work + kFlag, label, bad_value_host);
}

}  // namespace cortado
