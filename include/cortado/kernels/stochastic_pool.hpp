// kernels/stochastic_pool.hpp — STOCHASTIC pooling's arithmetic over one window, shared word for word
// by pooling.cpp (CPU) and cuda/pooling.cu (GPU), so both devices draw the same samples and compute
// the same values from the same seed. Plain inline functions, marked __host__ __device__ when nvcc
// compiles them; no CUDA types.
//
// A window is rows [h0, h1) × columns [w0, w1) of a plane `width` wide, and is not empty.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define CORTADO_HOST_DEVICE __host__ __device__
#else
#define CORTADO_HOST_DEVICE
#endif

namespace cortado {

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

}  // namespace cortado
