// softmax.cu — Softmax's kernels (kernels/dense.hpp) along the middle axis of (outer, channels, inner).
// Two shapes of work: when inner is large (dense prediction), one thread per (outer, inner) position
// walks the channels, neighbouring threads reading neighbouring memory; when inner is small
// (classification, inner = 1), one warp per position splits the channels among its lanes and
// combines them with shuffles.
#include <cmath>

#include "cortado/cuda/resources.hpp"  // cuda::Stream, CORTADO_KERNEL_LOOP, CORTADO_LAUNCH
#include "cortado/kernels/dense.hpp"

namespace cortado {

namespace {

constexpr int kWarp = 32;
constexpr int64_t kThreadPerPositionInner = 32;  // inner ≥ this: one thread per position

__device__ float WarpMax(float v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

__device__ float WarpSum(float v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// ---- one thread per position ---------------------------------------------------------------------

__global__ void SoftmaxForwardThreadKernel(int64_t positions, int64_t channels, int64_t inner, const float* x,
                                           float* y) {
  CORTADO_KERNEL_LOOP(p, positions) {
    const int64_t base = (p / inner) * channels * inner + p % inner;
    float m = x[base];
    for (int64_t c = 1; c < channels; ++c) m = fmaxf(m, x[base + c * inner]);
    float sum = 0.0f;
    for (int64_t c = 0; c < channels; ++c) {
      const float e = expf(x[base + c * inner] - m);
      y[base + c * inner] = e;
      sum += e;
    }
    const float scale = 1.0f / sum;
    for (int64_t c = 0; c < channels; ++c) y[base + c * inner] *= scale;
  }
}

__global__ void SoftmaxBackwardThreadKernel(int64_t positions, int64_t channels, int64_t inner, const float* y,
                                            const float* dy, float* dx) {
  CORTADO_KERNEL_LOOP(p, positions) {
    const int64_t base = (p / inner) * channels * inner + p % inner;
    float dot = 0.0f;
    for (int64_t c = 0; c < channels; ++c) dot += dy[base + c * inner] * y[base + c * inner];
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t i = base + c * inner;
      dx[i] = (dy[i] - dot) * y[i];
    }
  }
}

// ---- one warp per position -----------------------------------------------------------------------
// Every lane of a warp has the same position p, so the shuffles always see the full warp.

__global__ void SoftmaxForwardWarpKernel(int64_t positions, int64_t channels, int64_t inner, const float* x,
                                         float* y) {
  const int lane = threadIdx.x % kWarp;
  const int64_t first = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x / kWarp;
  for (int64_t p = first; p < positions; p += step) {
    const int64_t base = (p / inner) * channels * inner + p % inner;
    float m = -INFINITY;
    for (int64_t c = lane; c < channels; c += kWarp) m = fmaxf(m, x[base + c * inner]);
    m = WarpMax(m);
    float sum = 0.0f;
    for (int64_t c = lane; c < channels; c += kWarp) {
      const float e = expf(x[base + c * inner] - m);
      y[base + c * inner] = e;
      sum += e;
    }
    const float scale = 1.0f / WarpSum(sum);
    for (int64_t c = lane; c < channels; c += kWarp) y[base + c * inner] *= scale;
  }
}

__global__ void SoftmaxBackwardWarpKernel(int64_t positions, int64_t channels, int64_t inner, const float* y,
                                          const float* dy, float* dx) {
  const int lane = threadIdx.x % kWarp;
  const int64_t first = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x / kWarp;
  for (int64_t p = first; p < positions; p += step) {
    const int64_t base = (p / inner) * channels * inner + p % inner;
    float dot = 0.0f;
    for (int64_t c = lane; c < channels; c += kWarp) dot += dy[base + c * inner] * y[base + c * inner];
    dot = WarpSum(dot);
    for (int64_t c = lane; c < channels; c += kWarp) {
      const int64_t i = base + c * inner;
      dx[i] = (dy[i] - dot) * y[i];
    }
  }
}

// Blocks for one warp per position (kThreads is a multiple of the warp size).
int WarpBlocks(int64_t positions) { return cuda::BlocksFor(positions * kWarp); }

}  // namespace

void SoftmaxForwardGpu(Context& ctx, int64_t outer, int64_t channels, int64_t inner, const float* x, float* y) {
  const int64_t positions = outer * inner;
  if (positions == 0 || channels == 0) return;
  if (inner >= kThreadPerPositionInner) {
    CORTADO_LAUNCH(SoftmaxForwardThreadKernel, cuda::BlocksFor(positions), cuda::kThreads, 0, cuda::Stream(ctx),
                   positions, channels, inner, x, y);
  } else {
    CORTADO_LAUNCH(SoftmaxForwardWarpKernel, WarpBlocks(positions), cuda::kThreads, 0, cuda::Stream(ctx), positions,
                   channels, inner, x, y);
  }
}

void SoftmaxBackwardGpu(Context& ctx, int64_t outer, int64_t channels, int64_t inner, const float* y,
                        const float* dy, float* dx) {
  const int64_t positions = outer * inner;
  if (positions == 0 || channels == 0) return;
  if (inner >= kThreadPerPositionInner) {
    CORTADO_LAUNCH(SoftmaxBackwardThreadKernel, cuda::BlocksFor(positions), cuda::kThreads, 0, cuda::Stream(ctx),
                   positions, channels, inner, y, dy, dx);
  } else {
    CORTADO_LAUNCH(SoftmaxBackwardWarpKernel, WarpBlocks(positions), cuda::kThreads, 0, cuda::Stream(ctx), positions,
                   channels, inner, y, dy, dx);
  }
}

}  // namespace cortado
