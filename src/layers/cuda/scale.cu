// scale.cu — the kernels of Scale and Bias (kernels/norm.hpp): y = x · γ[d] + β[d] over
// (outer, dim, inner), and per-d sums over (outer, inner) — chunked channel sums in double
// (cuda/channel_sums.cuh).
#include "cortado/cuda/channel_sums.cuh"  // cuda::QueueChannelSums
#include "cortado/cuda/resources.hpp"     // cuda::Stream, CORTADO_KERNEL_LOOP, CORTADO_CUDA_LAUNCH_CHECK
#include "cortado/kernels/norm.hpp"

namespace cortado {

namespace {

__global__ void ScaleBiasKernel(int64_t n, int64_t dim, int64_t inner, const float* x, const float* scale,
                                const float* bias, float* y) {
  CORTADO_KERNEL_LOOP(i, n) {
    const int64_t d = i / inner % dim;
    const float v = scale ? x[i] * scale[d] : x[i];
    y[i] = bias ? v + bias[d] : v;
  }
}

struct SumOfProducts {  // Σ a · b, b null reading as 1
  static constexpr int kSums = 1;
  const float* a;
  const float* b;
  __device__ void operator()(int64_t i, int64_t, double* sum) const {
    sum[0] += b ? static_cast<double>(a[i]) * b[i] : a[i];
  }
};

struct StoreSum {  // out[d] = (accumulate ? out[d] : 0) + Σ
  bool accumulate;
  float* out;
  __device__ void operator()(int64_t d, const double* total) const {
    out[d] = static_cast<float>(accumulate ? out[d] + total[0] : total[0]);
  }
};

}  // namespace

void ScaleBiasForwardGpu(Context& ctx, int64_t outer, int64_t dim, int64_t inner, const float* x,
                         const float* scale, const float* bias, float* y) {
  const int64_t n = outer * dim * inner;
  if (n == 0) return;
  ScaleBiasKernel<<<cuda::BlocksFor(n), cuda::kThreads, 0, cuda::Stream(ctx)>>>(n, dim, inner, x, scale, bias, y);
  CORTADO_CUDA_LAUNCH_CHECK();
}

void ChannelSumGpu(Context& ctx, int64_t outer, int64_t dim, int64_t inner, const float* a, const float* b,
                   bool accumulate, float* scratch, float* out) {
  cuda::QueueChannelSums(ctx, outer, dim, inner, scratch, SumOfProducts{a, b}, StoreSum{accumulate, out});
}

}  // namespace cortado
