// batch_reindex.cu — BatchReindex's kernels (batch_reindex_gpu.hpp): the row gather that marks a bad index,
// and the backward pass in which every element of dx sums its picks in increasing k (no atomics).
#include "../batch_reindex_gpu.hpp"
#include "../loss_math.hpp"            // FirstBadLabelGpu
#include "cortado/cuda/resources.hpp"  // cuda::Stream, CORTADO_KERNEL_LOOP, CORTADO_LAUNCH

namespace cortado {

namespace {

__device__ __forceinline__ bool InRange(float v, int64_t num) { return v >= 0.0f && v < static_cast<float>(num); }

// lanes = max(dim, 1) per index, so that indices are checked even when the rows are empty.
__global__ void BatchReindexForwardKernel(int64_t total, int64_t num, int64_t dim, int64_t lanes, const float* idx,
                                          const float* x, float* y, unsigned* flag) {
  CORTADO_KERNEL_LOOP(e, total) {
    const int64_t k = e / lanes, d = e % lanes;
    const float v = idx[k];
    if (!InRange(v, num)) {
      if (d == 0) atomicMin(flag, static_cast<unsigned>(k));
      if (dim > 0) y[e] = 0.0f;
      continue;
    }
    if (dim > 0) y[e] = x[static_cast<int64_t>(v) * dim + d];
  }
}

__global__ void BatchReindexBackwardKernel(int64_t total, int64_t count, int64_t dim, const float* idx,
                                           const float* dy, float* dx) {
  CORTADO_KERNEL_LOOP(e, total) {
    const int64_t n = e / dim, d = e % dim;
    float sum = 0.0f;
    for (int64_t k = 0; k < count; ++k)
      if (static_cast<int64_t>(idx[k]) == n) sum += dy[k * dim + d];
    dx[e] = sum;
  }
}

}  // namespace

int64_t BatchReindexForwardGpu(Context& ctx, int64_t num, int64_t count, int64_t dim, const float* idx,
                               const float* x, float* y, float* flag, float* bad_value_host) {
  if (count == 0) return -1;
  const int64_t lanes = dim > 0 ? dim : 1, total = count * lanes;
  const cudaStream_t stream = cuda::Stream(ctx);
  CORTADO_CUDA_CHECK(cudaMemsetAsync(flag, 0xff, sizeof(unsigned), stream));
  CORTADO_LAUNCH(BatchReindexForwardKernel, cuda::BlocksFor(total), cuda::kThreads, 0, stream, total, num, dim, lanes,
                 idx, x, y, reinterpret_cast<unsigned*>(flag));
  return FirstBadLabelGpu(ctx, flag, idx, bad_value_host);
}

void BatchReindexBackwardGpu(Context& ctx, int64_t num, int64_t count, int64_t dim, const float* idx,
                             const float* dy, float* dx) {
  const int64_t total = num * dim;
  if (total == 0) return;
  CORTADO_LAUNCH(BatchReindexBackwardKernel, cuda::BlocksFor(total), cuda::kThreads, 0, cuda::Stream(ctx), total, count,
                 dim, idx, dy, dx);
}

}  // namespace cortado
