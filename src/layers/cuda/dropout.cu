// dropout.cu — Dropout's mask on the GPU (kernels/neuron.hpp). Each element draws its own 32-bit
// number from a counter-based generator: output i of SplitMix64 seeded with `seed` (the layer draws
// a fresh seed from the context's RNG before each step and the kernel reads it from `seed`, a
// StepInputs word), so no generator state lives on the device.
#include "cortado/cuda/resources.hpp"  // cuda::Stream, CORTADO_KERNEL_LOOP, CORTADO_LAUNCH
#include "cortado/kernels/neuron.hpp"

namespace cortado {

namespace {

// The high 32 bits of SplitMix64's i-th output for `seed`.
__device__ __forceinline__ uint32_t HashDraw(uint64_t seed, uint64_t i) {
  uint64_t z = seed + (i + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<uint32_t>(z >> 32);
}

__global__ void DropoutForwardKernel(int64_t n, const uint64_t* seed_word, uint64_t threshold, float scale, const float* x,
                                     float* mask, float* y) {
  const uint64_t seed = *seed_word;
  CORTADO_KERNEL_LOOP(i, n) {
    const float m = HashDraw(seed, static_cast<uint64_t>(i)) >= threshold ? scale : 0.0f;
    mask[i] = m;
    y[i] = x[i] * m;
  }
}

}  // namespace

void DropoutForwardGpu(Context& ctx, int64_t n, const uint64_t* seed, uint64_t threshold, float scale, const float* x,
                       float* mask, float* y) {
  if (n == 0) return;
  CORTADO_LAUNCH(DropoutForwardKernel, cuda::BlocksFor(n), cuda::kThreads, 0, cuda::Stream(ctx), n, seed, threshold,
                 scale, x, mask, y);
}

}  // namespace cortado
