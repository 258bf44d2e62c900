// embed.cu — Embed's kernels (embed_gpu.hpp): the row gather (with the bias) that marks a bad index,
// and the weight gradient's atomicAdd scatter.
#include <cmath>

#include "../embed_gpu.hpp"
#include "../loss_math.hpp"            // FirstBadLabelGpu
#include "cortado/cuda/resources.hpp"  // cuda::Stream, CORTADO_KERNEL_LOOP, CORTADO_LAUNCH

namespace cortado {

namespace {

// embed.cpp's IsIndex: an integer in [0, k) (NaN is not).
__device__ __forceinline__ bool IsIndex(float v, int64_t k) {
  return v >= 0.0f && v < static_cast<float>(k) && v == floorf(v);
}

__global__ void EmbedForwardKernel(int64_t total, int64_t n, int64_t k, const float* x, const float* w,
                                   const float* b, float* y, unsigned* flag) {
  CORTADO_KERNEL_LOOP(e, total) {
    const int64_t i = e / n, j = e % n;
    const float v = x[i];
    if (!IsIndex(v, k)) {
      if (j == 0) atomicMin(flag, static_cast<unsigned>(i));
      y[e] = 0.0f;
      continue;
    }
    const float value = w[static_cast<int64_t>(v) * n + j];
    y[e] = b ? value + b[j] : value;
  }
}

__global__ void EmbedWeightGradientKernel(int64_t total, int64_t n, int64_t k, const float* x, const float* dy,
                                          float* dw) {
  CORTADO_KERNEL_LOOP(e, total) {
    const int64_t i = e / n, j = e % n;
    const float v = x[i];
    if (IsIndex(v, k)) atomicAdd(dw + static_cast<int64_t>(v) * n + j, dy[e]);  // Forward refused the rest
  }
}

}  // namespace

int64_t EmbedForwardGpu(Context& ctx, int64_t m, int64_t n, int64_t k, const float* x, const float* w,
                        const float* b, float* y, float* flag, float* bad_value_host) {
  if (m == 0) return -1;
  const cudaStream_t stream = cuda::Stream(ctx);
  CORTADO_CUDA_CHECK(cudaMemsetAsync(flag, 0xff, sizeof(unsigned), stream));
  const int64_t total = m * n;
  CORTADO_LAUNCH(EmbedForwardKernel, cuda::BlocksFor(total), cuda::kThreads, 0, stream, total, n, k, x, w, b, y,
                 reinterpret_cast<unsigned*>(flag));
  return FirstBadLabelGpu(ctx, flag, x, bad_value_host);
}

void EmbedWeightGradientGpu(Context& ctx, int64_t m, int64_t n, int64_t k, const float* x, const float* dy,
                            float* dw) {
  const int64_t total = m * n;
  if (total == 0) return;
  CORTADO_LAUNCH(EmbedWeightGradientKernel, cuda::BlocksFor(total), cuda::kThreads, 0, cuda::Stream(ctx), total, n, k,
                 x, dy, dw);
}

}  // namespace cortado
