// lrn_gpu.hpp — launchers of LRN's GPU kernels (cuda/lrn.cu), and LrnShape, which oneDNN's LRN
// (onednn_engine.hpp) is made for too. No CUDA types, so lrn.cpp calls them from Forward_gpu /
// Backward_gpu (CORTADO_GPU_ONLY: a CPU-only build needs no stub). Every pointer is a device pointer;
// everything runs on the context's compute stream without waiting.
#pragma once

#include <cstdint>

#include "cortado/context.hpp"
#include "cortado/kernels/for_each.hpp"  // CORTADO_GPU_ONLY

namespace cortado {

// x, y, scale, dy, dx: (num, channels, height, width). The window of an element is the `size`
// channels centred on it (across) or the size × size square centred on it in its own plane
// (within), clipped to the blob (outside counts as zero); size is odd. With S = Σ_window x²:
//   scale = k + coeff · S,   y = x · scale^(−beta)
//   dx = dy · scale^(−beta) − 2 · beta · coeff · x · Σ_window dy · y / scale
// (the windows are symmetric, so the window of the sum is the element's own). No two of the arrays
// may alias.
struct LrnShape {
  int64_t num;
  int channels, height, width;
  int size;
  bool across;  // ACROSS_CHANNELS, else WITHIN_CHANNEL
  float k, coeff, beta;
};
CORTADO_GPU_ONLY(void LrnForwardGpu(Context& ctx, const LrnShape& s, const float* x, float* scale, float* y))
CORTADO_GPU_ONLY(void LrnBackwardGpu(Context& ctx, const LrnShape& s, const float* x, const float* y,
                                     const float* scale, const float* dy, float* dx))

}  // namespace cortado
