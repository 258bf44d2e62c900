// activations.cu — the kernels of AbsVal, BNLL, Power, Exp, Log, Threshold, Clip, ELU, Swish and PReLU
// (kernels/activation.hpp). Each is one grid-stride loop with the same formula as the layer's CPU
// loop, except PReLU's slope gradient: chunked channel sums in double in a fixed order
// (cuda/channel_sums.cuh; no atomics, so the same inputs give the same gradient), a shared slope
// summing the whole bottom as one channel.
#include "cortado/cuda/channel_sums.cuh"  // cuda::QueueChannelSums
#include "cortado/cuda/resources.hpp"     // cuda::Stream, CORTADO_KERNEL_LOOP, CORTADO_CUDA_LAUNCH_CHECK
#include "cortado/kernels/activation.hpp"

namespace cortado {

namespace {

// Launches an element-wise kernel over n elements on the context's compute stream.
template <typename... Params, typename... Args>
void Launch(Context& ctx, int64_t n, void (*kernel)(int64_t, Params...), Args... args) {
  if (n == 0) return;
  kernel<<<cuda::BlocksFor(n), cuda::kThreads, 0, cuda::Stream(ctx)>>>(n, args...);
  CORTADO_CUDA_LAUNCH_CHECK();
}

// ---- AbsVal, BNLL ----------------------------------------------------------------------------------

__global__ void AbsValForwardKernel(int64_t n, const float* x, float* y) {
  CORTADO_KERNEL_LOOP(i, n) y[i] = fabsf(x[i]);
}

__global__ void AbsValBackwardKernel(int64_t n, const float* x, const float* dy, float* dx) {
  CORTADO_KERNEL_LOOP(i, n) dx[i] = dy[i] * static_cast<float>((x[i] > 0) - (x[i] < 0));
}

__global__ void BNLLForwardKernel(int64_t n, const float* x, float* y) {
  CORTADO_KERNEL_LOOP(i, n) {
    const float v = x[i];
    y[i] = v > 0 ? v + log1pf(expf(-v)) : log1pf(expf(v));
  }
}

__global__ void BNLLBackwardKernel(int64_t n, const float* x, const float* dy, float* dx) {
  CORTADO_KERNEL_LOOP(i, n) {
    const float e = expf(fminf(x[i], 50.0f));
    dx[i] = dy[i] * e / (e + 1.0f);
  }
}

// ---- Power, Exp, Log ---------------------------------------------------------------------------------

__device__ float PowUnlessOne(float u, float p) { return p == 1.0f ? u : powf(u, p); }

__global__ void PowerForwardKernel(int64_t n, float power, float scale, float shift, const float* x, float* y) {
  CORTADO_KERNEL_LOOP(i, n) y[i] = PowUnlessOne(shift + scale * x[i], power);
}

__global__ void PowerBackwardKernel(int64_t n, float power, float scale, float shift, const float* x,
                                    const float* dy, float* dx) {
  const float diff_scale = power * scale;
  CORTADO_KERNEL_LOOP(i, n) dx[i] = dy[i] * diff_scale * PowUnlessOne(shift + scale * x[i], power - 1.0f);
}

__global__ void ExpForwardKernel(int64_t n, float inner, float outer, const float* x, float* y) {
  CORTADO_KERNEL_LOOP(i, n) y[i] = outer * expf(inner * x[i]);
}

__global__ void ExpBackwardKernel(int64_t n, float inner, const float* y, const float* dy, float* dx) {
  CORTADO_KERNEL_LOOP(i, n) dx[i] = dy[i] * y[i] * inner;
}

__global__ void LogForwardKernel(int64_t n, float scale, float shift, float base_scale, const float* x, float* y) {
  CORTADO_KERNEL_LOOP(i, n) y[i] = base_scale * logf(shift + scale * x[i]);
}

__global__ void LogBackwardKernel(int64_t n, float scale, float shift, float num_scale, const float* x,
                                  const float* dy, float* dx) {
  CORTADO_KERNEL_LOOP(i, n) dx[i] = dy[i] * (num_scale / (shift + scale * x[i]));
}

// ---- Threshold, Clip ---------------------------------------------------------------------------------

__global__ void ThresholdForwardKernel(int64_t n, float threshold, const float* x, float* y) {
  CORTADO_KERNEL_LOOP(i, n) y[i] = x[i] > threshold ? 1.0f : 0.0f;
}

__global__ void ClipForwardKernel(int64_t n, float lo, float hi, const float* x, float* y) {
  CORTADO_KERNEL_LOOP(i, n) y[i] = fmaxf(lo, fminf(x[i], hi));
}

__global__ void ClipBackwardKernel(int64_t n, float lo, float hi, const float* x, const float* dy, float* dx) {
  CORTADO_KERNEL_LOOP(i, n) dx[i] = dy[i] * static_cast<float>(x[i] >= lo && x[i] <= hi);
}

// ---- ELU, Swish --------------------------------------------------------------------------------------

__global__ void ELUForwardKernel(int64_t n, float alpha, const float* x, float* y) {
  CORTADO_KERNEL_LOOP(i, n) y[i] = x[i] > 0 ? x[i] : alpha * expm1f(x[i]);
}

__global__ void ELUBackwardKernel(int64_t n, float alpha, const float* x, const float* y, const float* dy,
                                  float* dx) {
  CORTADO_KERNEL_LOOP(i, n) dx[i] = x[i] > 0 ? dy[i] : dy[i] * (alpha + y[i]);
}

__global__ void SwishForwardKernel(int64_t n, float beta, const float* x, float* s, float* y) {
  CORTADO_KERNEL_LOOP(i, n) {
    const float v = x[i];
    const float sig = 1.0f / (1.0f + expf(-beta * v));
    s[i] = sig;
    y[i] = v * sig;
  }
}

__global__ void SwishBackwardKernel(int64_t n, float beta, const float* y, const float* s, const float* dy,
                                    float* dx) {
  CORTADO_KERNEL_LOOP(i, n) {
    const float by = beta * y[i];
    dx[i] = dy[i] * (by + s[i] * (1.0f - by));
  }
}

// ---- PReLU -------------------------------------------------------------------------------------------

__device__ int64_t ChannelOf(int64_t i, int channels, int64_t dim, bool shared) {
  return shared ? 0 : (i / dim) % channels;
}

__global__ void PReLUForwardKernel(int64_t n, int channels, int64_t dim, bool shared, const float* slope,
                                   const float* x, float* y) {
  CORTADO_KERNEL_LOOP(i, n) {
    const float v = x[i];
    y[i] = fmaxf(v, 0.0f) + slope[ChannelOf(i, channels, dim, shared)] * fminf(v, 0.0f);
  }
}

__global__ void PReLUBackwardKernel(int64_t n, int channels, int64_t dim, bool shared, const float* slope,
                                    const float* x, const float* dy, float* dx) {
  CORTADO_KERNEL_LOOP(i, n) dx[i] = x[i] > 0 ? dy[i] : dy[i] * slope[ChannelOf(i, channels, dim, shared)];
}

struct SumOfSlopeTerms {  // Σ dy · x · (x ≤ 0), the product in float as the CPU takes it
  static constexpr int kSums = 1;
  const float* x;
  const float* dy;
  __device__ void operator()(int64_t i, int64_t, double* sum) const {
    if (x[i] <= 0) sum[0] += dy[i] * x[i];
  }
};

struct AddSlopeDiff {  // slope_diff[c] += Σ
  float* slope_diff;
  __device__ void operator()(int64_t c, const double* total) const {
    slope_diff[c] = static_cast<float>(slope_diff[c] + total[0]);
  }
};

}  // namespace

void AbsValForwardGpu(Context& ctx, int64_t n, const float* x, float* y) { Launch(ctx, n, AbsValForwardKernel, x, y); }
void AbsValBackwardGpu(Context& ctx, int64_t n, const float* x, const float* dy, float* dx) {
  Launch(ctx, n, AbsValBackwardKernel, x, dy, dx);
}
void BNLLForwardGpu(Context& ctx, int64_t n, const float* x, float* y) { Launch(ctx, n, BNLLForwardKernel, x, y); }
void BNLLBackwardGpu(Context& ctx, int64_t n, const float* x, const float* dy, float* dx) {
  Launch(ctx, n, BNLLBackwardKernel, x, dy, dx);
}

void PowerForwardGpu(Context& ctx, int64_t n, float power, float scale, float shift, const float* x, float* y) {
  Launch(ctx, n, PowerForwardKernel, power, scale, shift, x, y);
}
void PowerBackwardGpu(Context& ctx, int64_t n, float power, float scale, float shift, const float* x,
                      const float* dy, float* dx) {
  Launch(ctx, n, PowerBackwardKernel, power, scale, shift, x, dy, dx);
}
void ExpForwardGpu(Context& ctx, int64_t n, float inner, float outer, const float* x, float* y) {
  Launch(ctx, n, ExpForwardKernel, inner, outer, x, y);
}
void ExpBackwardGpu(Context& ctx, int64_t n, float inner, const float* y, const float* dy, float* dx) {
  Launch(ctx, n, ExpBackwardKernel, inner, y, dy, dx);
}
void LogForwardGpu(Context& ctx, int64_t n, float scale, float shift, float base_scale, const float* x, float* y) {
  Launch(ctx, n, LogForwardKernel, scale, shift, base_scale, x, y);
}
void LogBackwardGpu(Context& ctx, int64_t n, float scale, float shift, float num_scale, const float* x,
                    const float* dy, float* dx) {
  Launch(ctx, n, LogBackwardKernel, scale, shift, num_scale, x, dy, dx);
}

void ThresholdForwardGpu(Context& ctx, int64_t n, float threshold, const float* x, float* y) {
  Launch(ctx, n, ThresholdForwardKernel, threshold, x, y);
}
void ClipForwardGpu(Context& ctx, int64_t n, float lo, float hi, const float* x, float* y) {
  Launch(ctx, n, ClipForwardKernel, lo, hi, x, y);
}
void ClipBackwardGpu(Context& ctx, int64_t n, float lo, float hi, const float* x, const float* dy, float* dx) {
  Launch(ctx, n, ClipBackwardKernel, lo, hi, x, dy, dx);
}

void ELUForwardGpu(Context& ctx, int64_t n, float alpha, const float* x, float* y) {
  Launch(ctx, n, ELUForwardKernel, alpha, x, y);
}
void ELUBackwardGpu(Context& ctx, int64_t n, float alpha, const float* x, const float* y, const float* dy,
                    float* dx) {
  Launch(ctx, n, ELUBackwardKernel, alpha, x, y, dy, dx);
}
void SwishForwardGpu(Context& ctx, int64_t n, float beta, const float* x, float* s, float* y) {
  Launch(ctx, n, SwishForwardKernel, beta, x, s, y);
}
void SwishBackwardGpu(Context& ctx, int64_t n, float beta, const float* y, const float* s, const float* dy,
                      float* dx) {
  Launch(ctx, n, SwishBackwardKernel, beta, y, s, dy, dx);
}

void PReLUForwardGpu(Context& ctx, int64_t n, int channels, int64_t dim, bool shared, const float* slope,
                     const float* x, float* y) {
  Launch(ctx, n, PReLUForwardKernel, channels, dim, shared, slope, x, y);
}
void PReLUBackwardGpu(Context& ctx, int64_t n, int channels, int64_t dim, bool shared, const float* slope,
                      const float* x, const float* dy, float* dx) {
  Launch(ctx, n, PReLUBackwardKernel, channels, dim, shared, slope, x, dy, dx);
}

void PReLUSlopeGradGpu(Context& ctx, int num, int channels, int64_t dim, bool shared, const float* x,
                       const float* dy, float* scratch, float* slope_diff) {
  const int64_t n = static_cast<int64_t>(num) * channels * dim;
  if (shared) {  // the bottom as one channel of n values
    cuda::QueueChannelSums(ctx, 1, 1, n, scratch, SumOfSlopeTerms{x, dy}, AddSlopeDiff{slope_diff});
  } else {
    cuda::QueueChannelSums(ctx, num, channels, dim, scratch, SumOfSlopeTerms{x, dy}, AddSlopeDiff{slope_diff});
  }
}

}  // namespace cortado
