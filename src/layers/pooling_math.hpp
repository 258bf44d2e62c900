// pooling_math.hpp — Pooling's arithmetic over one window, once for both devices: pooling.cpp (CPU)
// and cuda/pooling.cu (GPU) call the same CORTADO_HOST_DEVICE functions (kernels/for_each.hpp), so
// windows, maxima and their argmaxes, averages and STOCHASTIC's samples (drawn from the same seed)
// are the same on both. What differs by device is only how outputs are walked: the CPU runs a plane
// at a time (with fixed-size windows inside the image apart), the GPU a thread per output; and the
// backward passes, a scatter from each output on the CPU and a gather into each input on the GPU.
//
// A window is rows [h0, h1) × columns [w0, w1) of one plane. MAX and AVE read the plane through a
// PoolPlane<T>: storage type T (float, bf16, fp16), its values widened to float, every sum and
// comparison in float; the caller rounds each output once (FromFloat<T>). STOCHASTIC reads float.
//
// At the end, GPU-specific: ImageLayout (NCHW or NHWC), PoolShape and the launchers of
// cuda/pooling.cu's kernels.
#pragma once

#include <cstdint>

#include "cortado/context.hpp"
#include "cortado/kernels/for_each.hpp"  // CORTADO_HOST_DEVICE, CORTADO_GPU_ONLY

namespace cortado {

// Output o's input range [*lo, *hi) along one axis, clipped to the image; returns the window's length
// clipped to the padded image (AVE's divisor).
CORTADO_HOST_DEVICE inline int PoolWindow(int o, int stride, int pad, int kernel, int size, int* lo, int* hi) {
  const int start = o * stride - pad;
  const int end = start + kernel < size + pad ? start + kernel : size + pad;
  *lo = start > 0 ? start : 0;
  *hi = end < size ? end : size;
  return end - start;
}

// One plane of a blob of storage type T, read as float: element (h, w) lies at
// plane[(h·width + w)·step], step 1 in NCHW and the channel count in NHWC (channels-last, where a
// plane's neighbours lie a position's channels apart: the GPU's layout, ImageLayout::Plane).
template <typename T>
struct PoolPlane {
  const T* plane;
  int width;
  int step;
  CORTADO_HOST_DEVICE float operator()(int h, int w) const {
    return ToFloat(plane[static_cast<int64_t>(h * width + w) * step]);
  }
};

// The max and first argmax (h·width + w) of a non-empty rows × cols window at (h0, w0). Selects with a
// mask rather than a branch: on real data the comparison is unpredictable, and a mispredicted branch
// per element costs the CPU more than the rest.
template <typename T>
CORTADO_HOST_DEVICE inline void MaxOfWindow(const PoolPlane<T>& in, int h0, int rows, int w0, int cols, float* best_out,
                                            int* arg_out) {
  const int width = in.width;
  int arg = h0 * width + w0;
  float best = in(h0, w0);
  for (int h = h0; h < h0 + rows; ++h) {
    for (int w = w0; w < w0 + cols; ++w) {
      const float v = in(h, w);
      const int greater = v > best;
      arg += (h * width + w - arg) & -greater;
      best = MaxOf(best, v);
    }
  }
  *best_out = best;
  *arg_out = arg;
}

// AVE's output: the window's sum, row by row, over its size in the padded image (size_h · size_w); 0
// for a window wholly in the padding.
template <typename T>
CORTADO_HOST_DEVICE inline float AverageOfWindow(const PoolPlane<T>& in, int h0, int h1, int w0, int w1, int size_h,
                                                 int size_w) {
  float sum = 0.0f;
  for (int h = h0; h < h1; ++h)
    for (int w = w0; w < w1; ++w) sum += in(h, w);
  const bool empty = h0 >= h1 || w0 >= w1;
  return empty ? 0.0f : sum / static_cast<float>(size_h * size_w);
}

// ---- STOCHASTIC (windows not empty) ----------------------------------------------------------------
// The uniform draw in (0, 1] for output i of a Forward whose seed is `seed`: the high 24 bits k of
// SplitMix64's i-th output, as (k + 1)·2⁻²⁴ (exact in float, so no rounding differs between devices).
CORTADO_HOST_DEVICE inline float StochasticPoolUniform(uint64_t seed, uint64_t i) {
  uint64_t z = seed + (i + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>((z >> 40) + 1) * (1.0f / 16777216.0f);
}

// TRAIN: samples a position with probability proportional to its (non-negative) activation, as Caffe
// does: the first position in row-major order at which the running sum reaches u·Σ window (the last
// position when none does, e.g. with NaN). Writes its value and returns its index h·width + w.
CORTADO_HOST_DEVICE inline int StochasticPoolPick(const float* plane, int width, int h0, int h1, int w0, int w1,
                                                  float u, float* value) {
  float sum = 0.0f;
  for (int h = h0; h < h1; ++h)
    for (int w = w0; w < w1; ++w) sum += plane[h * width + w];
  const float threshold = u * sum;
  float running = 0.0f;
  for (int h = h0; h < h1; ++h) {
    for (int w = w0; w < w1; ++w) {
      running += plane[h * width + w];
      if (running >= threshold) {
        *value = plane[h * width + w];
        return h * width + w;
      }
    }
  }
  const int last = (h1 - 1) * width + (w1 - 1);
  *value = plane[last];
  return last;
}

// TEST: the activations weighted by themselves, Σx² / Σx, or 0 when Σx ≤ 0 (Caffe's rule). Writes
// Σx to *sum (Backward's divisor).
CORTADO_HOST_DEVICE inline float StochasticPoolTestValue(const float* plane, int width, int h0, int h1, int w0, int w1,
                                                         float* sum) {
  float s = 0.0f, squares = 0.0f;
  for (int h = h0; h < h1; ++h) {
    for (int w = w0; w < w1; ++w) {
      const float v = plane[h * width + w];
      s += v;
      squares += v * v;
    }
  }
  *sum = s;
  return s > 0.0f ? squares / s : 0.0f;
}

// ---- GPU-specific: Pooling's kernels (cuda/pooling.cu) ----------------------------------------------
// Where element (n, c, h, w) of an N × C × height × width blob lies: Caffe's NCHW, or NHWC
// (channels-last, Blob::channels_last: each position's C channels side by side). The kernels walk x
// and y in their memory order (Locate) and find windows and planes through At and Plane, so one
// kernel body serves both layouts, with the same windows, arithmetic and argmaxes (h·width + w within
// the plane, as Caffe's).
struct ImageLayout {
  int channels, height, width;
  bool nhwc;
  CORTADO_HOST_DEVICE int64_t At(int64_t n, int c, int h, int w) const {
    return nhwc ? ((n * height + h) * width + w) * channels + c : ((n * channels + c) * height + h) * width + w;
  }
  // Plane (n, c) of `blob`, for the window functions above.
  template <typename T>
  CORTADO_HOST_DEVICE PoolPlane<T> Plane(const T* blob, int64_t n, int c) const {
    return {blob + At(n, c, 0, 0), width, nhwc ? channels : 1};
  }
  // The (n, c, h, w) of the element at offset k: At's inverse.
  CORTADO_HOST_DEVICE void Locate(int64_t k, int64_t* n, int* c, int* h, int* w) const {
    if (nhwc) {
      *c = static_cast<int>(k % channels), k /= channels;
      *w = static_cast<int>(k % width), k /= width;
      *h = static_cast<int>(k % height), *n = k / height;
    } else {
      *w = static_cast<int>(k % width), k /= width;
      *h = static_cast<int>(k % height), k /= height;
      *c = static_cast<int>(k % channels), *n = k / channels;
    }
  }
};

// No CUDA types, so pooling.cpp calls them from Forward_gpu / Backward_gpu (CORTADO_GPU_ONLY: in a
// CPU-only build each throws). Every pointer is a device pointer; everything runs on the context's
// compute stream without waiting.
// `planes` planes of height × width pooled to out_h × out_w with pooling.cpp's windows: window (ph, pw)
// covers rows [ph·stride_h − pad_h, + kernel_h) clipped to the image; AVE divides by the window
// clipped to the padded image (up to height + pad_h). Forward matches the CPU bit for bit: MAX keeps
// the first maximum in row-major order and writes its index h·width + w to mask (−1 for an empty
// window, whose output is 0); AVE sums the window row by row. Backward writes every dx element.
// MAX and AVE: x, y, dy and dx of one storage type T (float, BFloat16, Float16), each output's float
// result rounded once to T; in NCHW or, nhwc, channels-last (x and y alike; mask is laid out as y).
// (PoolShape is also the shape oneDNN's pooling is made for: onednn_engine.hpp, which reads NCHW.)
struct PoolShape {
  int64_t planes;  // num · channels
  int height, width, out_h, out_w;
  int kernel_h, kernel_w, pad_h, pad_w, stride_h, stride_w;
  int channels;
  bool nhwc;
  CORTADO_HOST_DEVICE ImageLayout In() const { return {channels, height, width, nhwc}; }
  CORTADO_HOST_DEVICE ImageLayout Out() const { return {channels, out_h, out_w, nhwc}; }
};
template <typename T>
CORTADO_GPU_ONLY(void MaxPoolForwardGpu(Context& ctx, const PoolShape& s, const T* x, T* y, float* mask))
template <typename T>
CORTADO_GPU_ONLY(void MaxPoolBackwardGpu(Context& ctx, const PoolShape& s, const T* dy, const float* mask, T* dx))
template <typename T>
CORTADO_GPU_ONLY(void AvePoolForwardGpu(Context& ctx, const PoolShape& s, const T* x, T* y))
template <typename T>
CORTADO_GPU_ONLY(void AvePoolBackwardGpu(Context& ctx, const PoolShape& s, const T* dy, T* dx))
// STOCHASTIC (no padding; float, NCHW; each window's arithmetic is the functions above, as on the CPU).
// TRAIN: output k samples its window with StochasticPoolPick and the draw StochasticPoolUniform(seed, k);
// y = the sampled value, pick = its index h·width + w (−1 for an empty window, whose y is 0). Its
// backward is MaxPoolBackwardGpu<float> with pick as the mask.
CORTADO_GPU_ONLY(void StoPoolForwardTrainGpu(Context& ctx, const PoolShape& s, const uint64_t* seed, const float* x,
                                             float* y, float* pick))
// TEST: y = StochasticPoolTestValue (Σx² / Σx, 0 when Σx ≤ 0), sum = Σx (0 for an empty window).
CORTADO_GPU_ONLY(void StoPoolForwardTestGpu(Context& ctx, const PoolShape& s, const float* x, float* y, float* sum))
// TEST's gradient: dx = Σ over the windows holding x with sum > 0 of dy·(2x − y) / sum. Writes every dx.
CORTADO_GPU_ONLY(void StoPoolBackwardTestGpu(Context& ctx, const PoolShape& s, const float* x, const float* y,
                                             const float* dy, const float* sum, float* dx))

}  // namespace cortado
