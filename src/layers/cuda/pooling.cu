// pooling.cu — Pooling's kernels (their launchers end pooling_math.hpp). Forward: one thread per output,
// running pooling_math.hpp's window arithmetic, the CPU's own, so outputs and argmaxes equal the CPU's
// bit for bit (STOCHASTIC's samples too). Backward: one thread per input element gathers, in increasing
// output order, the outputs whose windows hold it, and writes its gradient (no atomics, no zeroing pass).
// MAX and AVE are templates over the storage type (float, bf16, fp16: float arithmetic, each result
// rounded once) and index x and y through ImageLayout, so the same kernels run NCHW and NHWC blobs;
// STOCHASTIC is float and NCHW.
#include "cortado/cuda/resources.hpp"  // cuda::Stream, CORTADO_KERNEL_LOOP, CORTADO_LAUNCH
#include "../pooling_math.hpp"  // PoolShape, ImageLayout, PoolWindow, MaxOfWindow, AverageOfWindow, StochasticPool*

namespace cortado {

namespace {

// The outputs [*lo, *hi) along one axis whose windows hold input index i (a superset is harmless:
// MAX checks the mask and AVE's windows are exactly these).
__device__ __forceinline__ void Outputs(int i, int stride, int pad, int kernel, int out, int* lo, int* hi) {
  *lo = i + pad < kernel ? 0 : (i + pad - kernel) / stride + 1;
  *hi = min((i + pad) / stride + 1, out);
}

// MAX and AVE over storage type T, in either layout (PoolShape::In, Out): thread k computes y's element
// at offset k.
template <typename T>
__global__ void MaxPoolForwardKernel(int64_t count, PoolShape s, const T* x, T* y, float* mask) {
  const ImageLayout in = s.In(), out = s.Out();
  CORTADO_KERNEL_LOOP(k, count) {
    int64_t n;
    int c, ph, pw, h0, h1, w0, w1;
    out.Locate(k, &n, &c, &ph, &pw);
    PoolWindow(ph, s.stride_h, s.pad_h, s.kernel_h, s.height, &h0, &h1);
    PoolWindow(pw, s.stride_w, s.pad_w, s.kernel_w, s.width, &w0, &w1);
    float best = 0.0f;
    int arg = -1;
    if (h0 < h1 && w0 < w1) MaxOfWindow(in.Plane(x, n, c), h0, h1 - h0, w0, w1 - w0, &best, &arg);
    y[k] = FromFloat<T>(best);
    mask[k] = static_cast<float>(arg);
  }
}

template <typename T>
__global__ void AvePoolForwardKernel(int64_t count, PoolShape s, const T* x, T* y) {
  const ImageLayout in = s.In(), out = s.Out();
  CORTADO_KERNEL_LOOP(k, count) {
    int64_t n;
    int c, ph, pw, h0, h1, w0, w1;
    out.Locate(k, &n, &c, &ph, &pw);
    const int size_h = PoolWindow(ph, s.stride_h, s.pad_h, s.kernel_h, s.height, &h0, &h1);
    const int size_w = PoolWindow(pw, s.stride_w, s.pad_w, s.kernel_w, s.width, &w0, &w1);
    y[k] = FromFloat<T>(AverageOfWindow(in.Plane(x, n, c), h0, h1, w0, w1, size_h, size_w));
  }
}

// Backward, thread k: dx's element at offset k, summed in float over the outputs of its plane in
// increasing order (the CPU's scatter adds them in the same order), rounded once.
template <typename T>
__global__ void MaxPoolBackwardKernel(int64_t count, PoolShape s, const T* dy, const float* mask, T* dx) {
  const ImageLayout in = s.In(), out = s.Out();
  CORTADO_KERNEL_LOOP(k, count) {
    int64_t n;
    int c, h, w, ph0, ph1, pw0, pw1;
    in.Locate(k, &n, &c, &h, &w);
    // Compared as integers, as the CPU does: above 2^24 pixels neighbouring indices share a float.
    const int64_t index = static_cast<int64_t>(h) * s.width + w;
    Outputs(h, s.stride_h, s.pad_h, s.kernel_h, s.out_h, &ph0, &ph1);
    Outputs(w, s.stride_w, s.pad_w, s.kernel_w, s.out_w, &pw0, &pw1);
    float g = 0.0f;
    for (int ph = ph0; ph < ph1; ++ph)
      for (int pw = pw0; pw < pw1; ++pw) {
        const int64_t q = out.At(n, c, ph, pw);
        if (mask[q] >= 0 && static_cast<int64_t>(mask[q]) == index) g += ToFloat(dy[q]);
      }
    dx[k] = FromFloat<T>(g);
  }
}

template <typename T>
__global__ void AvePoolBackwardKernel(int64_t count, PoolShape s, const T* dy, T* dx) {
  const ImageLayout in = s.In(), out = s.Out();
  CORTADO_KERNEL_LOOP(k, count) {
    int64_t n;
    int c, h, w, ph0, ph1, pw0, pw1;
    in.Locate(k, &n, &c, &h, &w);
    Outputs(h, s.stride_h, s.pad_h, s.kernel_h, s.out_h, &ph0, &ph1);
    Outputs(w, s.stride_w, s.pad_w, s.kernel_w, s.out_w, &pw0, &pw1);
    float g = 0.0f;
    for (int ph = ph0; ph < ph1; ++ph) {
      int lo, hi;
      const int size_h = PoolWindow(ph, s.stride_h, s.pad_h, s.kernel_h, s.height, &lo, &hi);
      for (int pw = pw0; pw < pw1; ++pw) {
        const int size_w = PoolWindow(pw, s.stride_w, s.pad_w, s.kernel_w, s.width, &lo, &hi);
        g += ToFloat(dy[out.At(n, c, ph, pw)]) / static_cast<float>(size_h * size_w);
      }
    }
    dx[k] = FromFloat<T>(g);
  }
}

// STOCHASTIC, TRAIN: output k samples its window with the draw StochasticPoolUniform(seed, k).
__global__ void StoPoolForwardTrainKernel(int64_t n, PoolShape s, const uint64_t* seed_word, const float* x, float* y,
                                          float* pick) {
  const uint64_t seed = *seed_word;
  CORTADO_KERNEL_LOOP(k, n) {
    const int pw = static_cast<int>(k % s.out_w), ph = static_cast<int>(k / s.out_w % s.out_h);
    const float* in = x + k / (static_cast<int64_t>(s.out_w) * s.out_h) * s.height * s.width;
    int h0, h1, w0, w1;
    PoolWindow(ph, s.stride_h, s.pad_h, s.kernel_h, s.height, &h0, &h1);
    PoolWindow(pw, s.stride_w, s.pad_w, s.kernel_w, s.width, &w0, &w1);
    float value = 0.0f;
    int index = -1;
    if (h0 < h1 && w0 < w1)
      index = StochasticPoolPick(in, s.width, h0, h1, w0, w1, StochasticPoolUniform(seed, static_cast<uint64_t>(k)),
                                 &value);
    y[k] = value;
    pick[k] = static_cast<float>(index);
  }
}

// STOCHASTIC, TEST: y = Σx² / Σx (0 when Σx ≤ 0), sum = Σx.
__global__ void StoPoolForwardTestKernel(int64_t n, PoolShape s, const float* x, float* y, float* sum) {
  CORTADO_KERNEL_LOOP(k, n) {
    const int pw = static_cast<int>(k % s.out_w), ph = static_cast<int>(k / s.out_w % s.out_h);
    const float* in = x + k / (static_cast<int64_t>(s.out_w) * s.out_h) * s.height * s.width;
    int h0, h1, w0, w1;
    PoolWindow(ph, s.stride_h, s.pad_h, s.kernel_h, s.height, &h0, &h1);
    PoolWindow(pw, s.stride_w, s.pad_w, s.kernel_w, s.width, &w0, &w1);
    float value = 0.0f, total = 0.0f;
    if (h0 < h1 && w0 < w1) value = StochasticPoolTestValue(in, s.width, h0, h1, w0, w1, &total);
    y[k] = value;
    sum[k] = total;
  }
}

// STOCHASTIC, TEST's gradient, one thread per input element: Σ over the windows holding it (every
// output in the Outputs range does: there is no padding) with sum > 0 of dy·(2x − y) / sum.
__global__ void StoPoolBackwardTestKernel(int64_t n, PoolShape s, const float* x, const float* y, const float* dy,
                                          const float* sum, float* dx) {
  CORTADO_KERNEL_LOOP(k, n) {
    const int w = static_cast<int>(k % s.width), h = static_cast<int>(k / s.width % s.height);
    const int64_t out_base = k / (static_cast<int64_t>(s.width) * s.height) * s.out_h * s.out_w;
    int ph0, ph1, pw0, pw1;
    Outputs(h, s.stride_h, s.pad_h, s.kernel_h, s.out_h, &ph0, &ph1);
    Outputs(w, s.stride_w, s.pad_w, s.kernel_w, s.out_w, &pw0, &pw1);
    const float v = x[k];
    float g = 0.0f;
    for (int ph = ph0; ph < ph1; ++ph)
      for (int pw = pw0; pw < pw1; ++pw) {
        const int64_t q = out_base + ph * s.out_w + pw;
        if (sum[q] > 0.0f) g += dy[q] * (2.0f * v - y[q]) / sum[q];
      }
    dx[k] = g;
  }
}

int64_t Outputs(const PoolShape& s) { return s.planes * s.out_h * s.out_w; }
int64_t Inputs(const PoolShape& s) { return s.planes * s.height * s.width; }

}  // namespace

template <typename T>
void MaxPoolForwardGpu(Context& ctx, const PoolShape& s, const T* x, T* y, float* mask) {
  const int64_t n = Outputs(s);
  if (n == 0) return;
  CORTADO_LAUNCH(MaxPoolForwardKernel<T>, cuda::BlocksFor(n), cuda::kThreads, 0, cuda::Stream(ctx), n, s, x, y, mask);
}

template <typename T>
void AvePoolForwardGpu(Context& ctx, const PoolShape& s, const T* x, T* y) {
  const int64_t n = Outputs(s);
  if (n == 0) return;
  CORTADO_LAUNCH(AvePoolForwardKernel<T>, cuda::BlocksFor(n), cuda::kThreads, 0, cuda::Stream(ctx), n, s, x, y);
}

template <typename T>
void MaxPoolBackwardGpu(Context& ctx, const PoolShape& s, const T* dy, const float* mask, T* dx) {
  const int64_t n = Inputs(s);
  if (n == 0) return;
  CORTADO_LAUNCH(MaxPoolBackwardKernel<T>, cuda::BlocksFor(n), cuda::kThreads, 0, cuda::Stream(ctx), n, s, dy, mask,
                 dx);
}

template <typename T>
void AvePoolBackwardGpu(Context& ctx, const PoolShape& s, const T* dy, T* dx) {
  const int64_t n = Inputs(s);
  if (n == 0) return;
  CORTADO_LAUNCH(AvePoolBackwardKernel<T>, cuda::BlocksFor(n), cuda::kThreads, 0, cuda::Stream(ctx), n, s, dy, dx);
}

// MAX and AVE over each storage type.
#define CORTADO_POOLING_GPU(T)                                                                           \
  template void MaxPoolForwardGpu<T>(Context&, const PoolShape&, const T*, T*, float*);                  \
  template void MaxPoolBackwardGpu<T>(Context&, const PoolShape&, const T*, const float*, T*);           \
  template void AvePoolForwardGpu<T>(Context&, const PoolShape&, const T*, T*);                          \
  template void AvePoolBackwardGpu<T>(Context&, const PoolShape&, const T*, T*)

CORTADO_POOLING_GPU(float);
CORTADO_POOLING_GPU(BFloat16);
CORTADO_POOLING_GPU(Float16);

void StoPoolForwardTrainGpu(Context& ctx, const PoolShape& s, const uint64_t* seed, const float* x, float* y,
                            float* pick) {
  const int64_t n = Outputs(s);
  if (n == 0) return;
  CORTADO_LAUNCH(StoPoolForwardTrainKernel, cuda::BlocksFor(n), cuda::kThreads, 0, cuda::Stream(ctx), n, s, seed, x, y,
                 pick);
}

void StoPoolForwardTestGpu(Context& ctx, const PoolShape& s, const float* x, float* y, float* sum) {
  const int64_t n = Outputs(s);
  if (n == 0) return;
  CORTADO_LAUNCH(StoPoolForwardTestKernel, cuda::BlocksFor(n), cuda::kThreads, 0, cuda::Stream(ctx), n, s, x, y, sum);
}

void StoPoolBackwardTestGpu(Context& ctx, const PoolShape& s, const float* x, const float* y, const float* dy,
                            const float* sum, float* dx) {
  const int64_t n = Inputs(s);
  if (n == 0) return;
  CORTADO_LAUNCH(StoPoolBackwardTestKernel, cuda::BlocksFor(n), cuda::kThreads, 0, cuda::Stream(ctx), n, s, x, y, dy,
                 sum, dx);
}

}  // namespace cortado
