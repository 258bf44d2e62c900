// lrn.cu — LRN's kernels (lrn_gpu.hpp): one thread per element sums its window (across channels
// or within its plane) in float, in increasing index order, as lrn.cpp does.
#include "../lrn_gpu.hpp"
#include "cortado/cuda/resources.hpp"  // cuda::Stream, CORTADO_KERNEL_LOOP, CORTADO_LAUNCH

namespace cortado {

namespace {

// Calls visit(j) for every element j in the window of element i, in increasing order of j.
template <typename Visit>
__device__ void ForWindow(const LrnShape& s, int64_t i, Visit visit) {
  const int half = s.size / 2;
  const int64_t plane = static_cast<int64_t>(s.height) * s.width;
  if (s.across) {
    const int c = static_cast<int>(i / plane % s.channels);
    const int lo = max(c - half, 0), hi = min(c + half, s.channels - 1);
    for (int cc = lo; cc <= hi; ++cc) visit(i + (cc - c) * plane);
    return;
  }
  const int64_t base = i - i % plane;
  const int h = static_cast<int>(i % plane / s.width), w = static_cast<int>(i % s.width);
  const int h_lo = max(h - half, 0), h_hi = min(h + half, s.height - 1);
  const int w_lo = max(w - half, 0), w_hi = min(w + half, s.width - 1);
  for (int hh = h_lo; hh <= h_hi; ++hh)
    for (int ww = w_lo; ww <= w_hi; ++ww) visit(base + static_cast<int64_t>(hh) * s.width + ww);
}

__global__ void LrnForwardKernel(int64_t n, LrnShape s, const float* x, float* scale, float* y) {
  CORTADO_KERNEL_LOOP(i, n) {
    float sum = 0;
    ForWindow(s, i, [&](int64_t j) { sum += x[j] * x[j]; });
    scale[i] = s.k + s.coeff * sum;
    y[i] = x[i] * powf(scale[i], -s.beta);
  }
}

__global__ void LrnBackwardKernel(int64_t n, LrnShape s, const float* x, const float* y, const float* scale,
                                  const float* dy, float* dx) {
  const float factor = 2.0f * s.beta * s.coeff;
  CORTADO_KERNEL_LOOP(i, n) {
    float sum = 0;
    ForWindow(s, i, [&](int64_t j) { sum += dy[j] * y[j] / scale[j]; });
    dx[i] = dy[i] * powf(scale[i], -s.beta) - factor * x[i] * sum;
  }
}

int64_t Count(const LrnShape& s) { return s.num * s.channels * s.height * s.width; }

}  // namespace

void LrnForwardGpu(Context& ctx, const LrnShape& s, const float* x, float* scale, float* y) {
  const int64_t n = Count(s);
  if (n == 0) return;
  CORTADO_LAUNCH(LrnForwardKernel, cuda::BlocksFor(n), cuda::kThreads, 0, cuda::Stream(ctx), n, s, x, scale, y);
}

void LrnBackwardGpu(Context& ctx, const LrnShape& s, const float* x, const float* y, const float* scale,
                    const float* dy, float* dx) {
  const int64_t n = Count(s);
  if (n == 0) return;
  CORTADO_LAUNCH(LrnBackwardKernel, cuda::BlocksFor(n), cuda::kThreads, 0, cuda::Stream(ctx), n, s, x, y, scale, dy,
                 dx);
}

}  // namespace cortado
