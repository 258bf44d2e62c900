// dropout_math.hpp — Dropout's mask, once for both devices (kernels/for_each.hpp): element i draws a
// 32-bit number from a counter-based generator, the high half of SplitMix64's i-th output for a seed,
// so no generator state is kept and the same seed gives the same mask on the CPU and on the GPU.
//   mask[i] = (u_i ≥ threshold ? scale : 0),  y[i] = x[i]·mask[i]  (ForEach; y may be x).
// The seed is read through a pointer where the functor runs: on the GPU a StepInputs word (the layer
// draws it from the context's RNG before each step, so a captured CUDA graph draws a new mask at every
// replay), on the CPU a host word the layer draws before each forward pass. Backward is dx = dy·mask
// (kernels/arithmetic.hpp's Product). dropout.cpp runs it; cuda/dropout_math.cu instantiates it.
#pragma once

#include <cstdint>
#include <random>

#include "cortado/kernels/for_each.hpp"

namespace cortado::dropout {

// A seed from the context's RNG: two 32-bit draws, the first the high half.
inline uint64_t DrawSeed(std::mt19937& rng) {
  const uint64_t high = rng();
  return (high << 32) | rng();
}

// The high 32 bits of SplitMix64's i-th output for `seed`.
CORTADO_HOST_DEVICE inline uint32_t HashDraw(uint64_t seed, uint64_t i) {
  uint64_t z = seed + (i + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<uint32_t>(z >> 32);
}

struct Forward {
  const uint64_t* seed;  // where the functor runs
  uint64_t threshold;    // u < threshold drops: ratio · 2³²
  float scale;           // 1 / (1 − ratio)
  const float* x;
  float* mask;
  float* y;
  CORTADO_HOST_DEVICE void operator()(int64_t i) const {
    const float m = HashDraw(*seed, static_cast<uint64_t>(i)) >= threshold ? scale : 0.0f;
    mask[i] = m;
    y[i] = x[i] * m;
  }
};

}  // namespace cortado::dropout
