// scale.cu — the kernels of Scale and Bias (kernels/norm.hpp): y = x · γ[d] + β[d] over
// (outer, dim, inner), and per-d sums over (outer, inner) — one block per d, reduced in double with cub.
#include <cub/block/block_reduce.cuh>

#include "cortado/cuda/resources.hpp"  // cuda::Stream, CORTADO_KERNEL_LOOP, CORTADO_CUDA_LAUNCH_CHECK
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

// Block d: out[d] (+)= Σ_{o, i} a · b.
__global__ void ChannelSumKernel(int64_t outer, int64_t dim, int64_t inner, const float* a, const float* b,
                                 bool accumulate, float* out) {
  const int64_t d = blockIdx.x;
  const int64_t m = outer * inner;
  double sum = 0;
  for (int64_t j = threadIdx.x; j < m; j += blockDim.x) {
    const int64_t i = (j / inner * dim + d) * inner + j % inner;
    sum += b ? static_cast<double>(a[i]) * b[i] : a[i];
  }
  using Reduce = cub::BlockReduce<double, cuda::kThreads>;
  __shared__ typename Reduce::TempStorage storage;
  const double total = Reduce(storage).Sum(sum);
  if (threadIdx.x == 0) out[d] = static_cast<float>(accumulate ? out[d] + total : total);
}

}  // namespace

void ScaleBiasForwardGpu(Context& ctx, int64_t outer, int64_t dim, int64_t inner, const float* x,
                         const float* scale, const float* bias, float* y) {
  const int64_t n = outer * dim * inner;
  if (n == 0) return;
  ScaleBiasKernel<<<cuda::BlocksFor(n), cuda::kThreads, 0, cuda::Stream(ctx)>>>(n, dim, inner, x, scale, bias, y);
  CORTADO_CUDA_LAUNCH_CHECK();
}

void ChannelSumGpu(Context& ctx, int64_t outer, int64_t dim, int64_t inner, const float* a, const float* b,
                   bool accumulate, float* out) {
  if (dim == 0) return;
  ChannelSumKernel<<<static_cast<unsigned>(dim), cuda::kThreads, 0, cuda::Stream(ctx)>>>(outer, dim, inner, a, b,
                                                                                          accumulate, out);
  CORTADO_CUDA_LAUNCH_CHECK();
}

}  // namespace cortado
