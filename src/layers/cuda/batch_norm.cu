// batch_norm.cu — BatchNorm's kernels (kernels/norm.hpp). The per-channel sums (batch mean, then
// variance about it; Backward's Σdy and Σdy·x̂) are chunked channel sums in double
// (cuda/channel_sums.cuh), whose finishing step stores what the layer keeps; the element-wise steps
// are grid-stride loops.
#include "cortado/cuda/channel_sums.cuh"  // cuda::QueueChannelSums
#include "cortado/cuda/resources.hpp"     // cuda::Stream, CORTADO_KERNEL_LOOP, CORTADO_CUDA_LAUNCH_CHECK
#include "cortado/kernels/norm.hpp"

namespace cortado {

namespace {

// ---- channel sums: terms (element i of channel c) and what each channel's totals become ----------

struct SumOfX {
  static constexpr int kSums = 1;
  const float* x;
  __device__ void operator()(int64_t i, int64_t, double* sum) const { sum[0] += x[i]; }
};

struct StoreMean {  // mean = Σx / m
  double m;
  float* mean;
  __device__ void operator()(int64_t c, const double* total) const { mean[c] = static_cast<float>(total[0] / m); }
};

struct SumOfSquares {  // Σ(x − mean)², the difference taken in float
  static constexpr int kSums = 1;
  const float* x;
  const float* mean;
  __device__ void operator()(int64_t i, int64_t c, double* sum) const {
    const float d = x[i] - mean[c];
    sum[0] += static_cast<double>(d) * d;
  }
};

struct StoreStats {  // var = Σ(x − mean)² / m: std and the running sums (channel 0: the weight too)
  double m;
  float eps, maf, correction;
  const float* mean;
  float *std, *running_mean, *running_var, *factor;
  __device__ void operator()(int64_t c, const double* total) const {
    const float var = static_cast<float>(total[0] / m);
    std[c] = sqrtf(var + eps);
    running_mean[c] = running_mean[c] * maf + mean[c];
    running_var[c] = running_var[c] * maf + correction * var;
    if (c == 0) *factor = *factor * maf + 1.0f;
  }
};

struct SumOfDyAndDyX {  // Σdy, Σdy·x̂
  static constexpr int kSums = 2;
  const float* dy;
  const float* x_norm;
  __device__ void operator()(int64_t i, int64_t, double* sum) const {
    sum[0] += dy[i];
    sum[1] += static_cast<double>(dy[i]) * x_norm[i];
  }
};

struct StoreMeans {  // means[c] = Σdy / m, means[channels + c] = Σdy·x̂ / m
  double m;
  int64_t channels;
  float* means;
  __device__ void operator()(int64_t c, const double* total) const {
    means[c] = static_cast<float>(total[0] / m);
    means[channels + c] = static_cast<float>(total[1] / m);
  }
};

// ---- element-wise ---------------------------------------------------------------------------------

__global__ void GlobalStatsKernel(int64_t channels, float eps, const float* running_mean, const float* running_var,
                                  const float* factor, float* mean, float* std) {
  const float f = *factor == 0 ? 0.0f : 1.0f / *factor;
  CORTADO_KERNEL_LOOP(c, channels) {
    mean[c] = f * running_mean[c];
    std[c] = sqrtf(f * running_var[c] + eps);
  }
}

__global__ void NormalizeKernel(int64_t n, int64_t channels, int64_t spatial, const float* x, const float* mean,
                                const float* std, float* y) {
  CORTADO_KERNEL_LOOP(i, n) {
    const int64_t c = i / spatial % channels;
    y[i] = (x[i] - mean[c]) / std[c];
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
                            float* factor, float* mean, float* std, float* scratch) {
  if (channels == 0 || num * spatial == 0) return;
  const double m = static_cast<double>(num * spatial);
  cuda::QueueChannelSums(ctx, num, channels, spatial, scratch, SumOfX{x}, StoreMean{m, mean});
  cuda::QueueChannelSums(ctx, num, channels, spatial, scratch, SumOfSquares{x, mean},
                         StoreStats{m, eps, maf, correction, mean, std, running_mean, running_var, factor});
}

void BatchNormGlobalStatsGpu(Context& ctx, int64_t channels, float eps, const float* running_mean,
                             const float* running_var, const float* factor, float* mean, float* std) {
  if (channels == 0) return;
  GlobalStatsKernel<<<cuda::BlocksFor(channels), cuda::kThreads, 0, cuda::Stream(ctx)>>>(
      channels, eps, running_mean, running_var, factor, mean, std);
  CORTADO_CUDA_LAUNCH_CHECK();
}

void BatchNormForwardGpu(Context& ctx, int64_t num, int64_t channels, int64_t spatial, const float* x,
                         const float* mean, const float* std, float* y) {
  const int64_t n = num * channels * spatial;
  if (n == 0) return;
  NormalizeKernel<<<cuda::BlocksFor(n), cuda::kThreads, 0, cuda::Stream(ctx)>>>(n, channels, spatial, x, mean, std,
                                                                                 y);
  CORTADO_CUDA_LAUNCH_CHECK();
}

void BatchNormBackwardGpu(Context& ctx, int64_t num, int64_t channels, int64_t spatial, bool global,
                          const float* dy, const float* x_norm, const float* std, float* sums, float* scratch,
                          float* dx) {
  const int64_t n = num * channels * spatial;
  if (n == 0) return;
  if (global) {
    GlobalBackwardKernel<<<cuda::BlocksFor(n), cuda::kThreads, 0, cuda::Stream(ctx)>>>(n, channels, spatial, dy,
                                                                                       std, dx);
    CORTADO_CUDA_LAUNCH_CHECK();
    return;
  }
  cuda::QueueChannelSums(ctx, num, channels, spatial, scratch, SumOfDyAndDyX{dy, x_norm},
                         StoreMeans{static_cast<double>(num * spatial), channels, sums});
  // After the sums (same stream): each element reads its dy before writing dx, so dx may be dy.
  BackwardKernel<<<cuda::BlocksFor(n), cuda::kThreads, 0, cuda::Stream(ctx)>>>(n, channels, spatial, dy, x_norm,
                                                                               std, sums, dx);
  CORTADO_CUDA_LAUNCH_CHECK();
}

}  // namespace cortado
