// batch_norm.cu — BatchNorm's kernels (kernels/norm.hpp). Per-channel sums take one block per
// channel, each thread striding over the channel's m = num · spatial values, reduced in double with
// cub; the element-wise steps are grid-stride loops.
#include <cub/block/block_reduce.cuh>

#include "cortado/cuda/resources.hpp"  // cuda::Stream, CORTADO_KERNEL_LOOP, CORTADO_CUDA_LAUNCH_CHECK
#include "cortado/kernels/norm.hpp"

namespace cortado {

namespace {

using Reduce = cub::BlockReduce<double, cuda::kThreads>;

// The index of the j-th value (j < num · spatial) of channel c.
__device__ __forceinline__ int64_t At(int64_t j, int64_t c, int64_t channels, int64_t spatial) {
  return (j / spatial * channels + c) * spatial + j % spatial;
}

// Block c: the batch mean and variance of channel c, std, and the running sums (block 0 also the
// running weight).
__global__ void BatchStatsKernel(int64_t num, int64_t channels, int64_t spatial, const float* x, float eps,
                                 float maf, float correction, float* running_mean, float* running_var,
                                 float* factor, float* mean, float* std) {
  __shared__ typename Reduce::TempStorage storage;
  __shared__ float mean_shared;
  const int64_t c = blockIdx.x;
  const int64_t m = num * spatial;
  double sum = 0;
  for (int64_t j = threadIdx.x; j < m; j += blockDim.x) sum += x[At(j, c, channels, spatial)];
  const double total = Reduce(storage).Sum(sum);
  if (threadIdx.x == 0) mean_shared = static_cast<float>(total / m);
  __syncthreads();  // mean_shared is ready and the storage may be reused
  const float mu = mean_shared;
  double squares = 0;
  for (int64_t j = threadIdx.x; j < m; j += blockDim.x) {
    const float d = x[At(j, c, channels, spatial)] - mu;
    squares += static_cast<double>(d) * d;
  }
  const double total_squares = Reduce(storage).Sum(squares);
  if (threadIdx.x != 0) return;
  const float var = static_cast<float>(total_squares / m);
  mean[c] = mu;
  std[c] = sqrtf(var + eps);
  running_mean[c] = running_mean[c] * maf + mu;
  running_var[c] = running_var[c] * maf + correction * var;
  if (c == 0) *factor = *factor * maf + 1.0f;
}

__global__ void GlobalStatsKernel(int64_t channels, float eps, const float* running_mean, const float* running_var,
                                  const float* factor, float* mean, float* std) {
  const float f = *factor == 0 ? 0.0f : 1.0f / *factor;
  CORTADO_KERNEL_LOOP(c, channels) {
    mean[c] = f * running_mean[c];
    std[c] = sqrtf(f * running_var[c] + eps);
  }
}

__global__ void NormalizeKernel(int64_t n, int64_t channels, int64_t spatial, const float* x, const float* mean,
                                const float* std, float* y, float* x_norm) {
  CORTADO_KERNEL_LOOP(i, n) {
    const int64_t c = i / spatial % channels;
    const float v = (x[i] - mean[c]) / std[c];
    y[i] = v;
    x_norm[i] = v;
  }
}

// Block c: sums[c] = Σ dy, sums[channels + c] = Σ dy · x̂ over channel c.
__global__ void BackwardSumsKernel(int64_t num, int64_t channels, int64_t spatial, const float* dy,
                                   const float* x_norm, float* sums) {
  __shared__ typename Reduce::TempStorage storage;
  const int64_t c = blockIdx.x;
  const int64_t m = num * spatial;
  double sum_dy = 0, sum_dyx = 0;
  for (int64_t j = threadIdx.x; j < m; j += blockDim.x) {
    const int64_t i = At(j, c, channels, spatial);
    sum_dy += dy[i];
    sum_dyx += static_cast<double>(dy[i]) * x_norm[i];
  }
  const double total_dy = Reduce(storage).Sum(sum_dy);
  __syncthreads();  // the storage is reused
  const double total_dyx = Reduce(storage).Sum(sum_dyx);
  if (threadIdx.x == 0) {
    sums[c] = static_cast<float>(total_dy / m);  // stored as means
    sums[channels + c] = static_cast<float>(total_dyx / m);
  }
}

__global__ void BackwardKernel(int64_t n, int64_t channels, int64_t spatial, const float* dy, const float* x_norm,
                               const float* std, const float* means, float* dx) {
  CORTADO_KERNEL_LOOP(i, n) {
    const int64_t c = i / spatial % channels;
    dx[i] = (dy[i] - means[c] - x_norm[i] * means[channels + c]) / std[c];
  }
}

__global__ void GlobalBackwardKernel(int64_t n, int64_t channels, int64_t spatial, const float* dy,
                                     const float* std, float* dx) {
  CORTADO_KERNEL_LOOP(i, n) dx[i] = dy[i] / std[i / spatial % channels];
}

}  // namespace

void BatchNormBatchStatsGpu(Context& ctx, int64_t num, int64_t channels, int64_t spatial, const float* x,
                            float eps, float maf, float correction, float* running_mean, float* running_var,
                            float* factor, float* mean, float* std) {
  if (channels == 0 || num * spatial == 0) return;
  BatchStatsKernel<<<static_cast<unsigned>(channels), cuda::kThreads, 0, cuda::Stream(ctx)>>>(
      num, channels, spatial, x, eps, maf, correction, running_mean, running_var, factor, mean, std);
  CORTADO_CUDA_LAUNCH_CHECK();
}

void BatchNormGlobalStatsGpu(Context& ctx, int64_t channels, float eps, const float* running_mean,
                             const float* running_var, const float* factor, float* mean, float* std) {
  if (channels == 0) return;
  GlobalStatsKernel<<<cuda::BlocksFor(channels), cuda::kThreads, 0, cuda::Stream(ctx)>>>(
      channels, eps, running_mean, running_var, factor, mean, std);
  CORTADO_CUDA_LAUNCH_CHECK();
}

void BatchNormForwardGpu(Context& ctx, int64_t num, int64_t channels, int64_t spatial, const float* x,
                         const float* mean, const float* std, float* y, float* x_norm) {
  const int64_t n = num * channels * spatial;
  if (n == 0) return;
  NormalizeKernel<<<cuda::BlocksFor(n), cuda::kThreads, 0, cuda::Stream(ctx)>>>(n, channels, spatial, x, mean, std,
                                                                                 y, x_norm);
  CORTADO_CUDA_LAUNCH_CHECK();
}

void BatchNormBackwardGpu(Context& ctx, int64_t num, int64_t channels, int64_t spatial, bool global,
                          const float* dy, const float* x_norm, const float* std, float* sums, float* dx) {
  const int64_t n = num * channels * spatial;
  if (n == 0) return;
  if (global) {
    GlobalBackwardKernel<<<cuda::BlocksFor(n), cuda::kThreads, 0, cuda::Stream(ctx)>>>(n, channels, spatial, dy,
                                                                                       std, dx);
    CORTADO_CUDA_LAUNCH_CHECK();
    return;
  }
  BackwardSumsKernel<<<static_cast<unsigned>(channels), cuda::kThreads, 0, cuda::Stream(ctx)>>>(
      num, channels, spatial, dy, x_norm, sums);
  CORTADO_CUDA_LAUNCH_CHECK();
  // After the sums (same stream): each element reads its dy before writing dx, so dx may be dy.
  BackwardKernel<<<cuda::BlocksFor(n), cuda::kThreads, 0, cuda::Stream(ctx)>>>(n, channels, spatial, dy, x_norm,
                                                                               std, sums, dx);
  CORTADO_CUDA_LAUNCH_CHECK();
}

}  // namespace cortado
