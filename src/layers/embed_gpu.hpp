// embed_gpu.hpp — launchers of Embed's GPU kernels (cuda/embed.cu). No CUDA types, so embed.cpp calls
// them from Forward_gpu / Backward_gpu (CORTADO_GPU_ONLY: in a CPU-only build each throws). Every
// pointer is a device pointer unless its name says host; everything runs on the context's compute
// stream without waiting, except the function that says it waits.
//
// `flag` is one device word (a float's room holding an unsigned) in which a kernel marks the first
// bad position; FirstBadLabelGpu (loss_math.hpp) reads it back.
#pragma once

#include <cstdint>

#include "cortado/context.hpp"
#include "cortado/kernels/for_each.hpp"  // CORTADO_GPU_ONLY

namespace cortado {

// x: m indices; w: (k, n); b: n or null. y (m, n): row i = w[x_i] (+ b). An index that is not an
// integer in [0, k) gives a row of zeros and marks its position in flag. Waits for the GPU to check
// the indices: returns the first bad position (its value in *bad_value_host), or −1.
CORTADO_GPU_ONLY(int64_t EmbedForwardGpu(Context& ctx, int64_t m, int64_t n, int64_t k, const float* x, const float* w,
                                         const float* b, float* y, float* flag, float* bad_value_host))
// dw[x_i] += dy_i for every i (atomicAdd: repeated indices are summed in no fixed order).
CORTADO_GPU_ONLY(void EmbedWeightGradientGpu(Context& ctx, int64_t m, int64_t n, int64_t k, const float* x,
                                             const float* dy, float* dw))

}  // namespace cortado
