// batch_reindex_gpu.hpp — launchers of BatchReindex's GPU kernels (cuda/batch_reindex.cu). No CUDA
// types, so batch_reindex.cpp calls them from Forward_gpu / Backward_gpu (CORTADO_GPU_ONLY: in a
// CPU-only build each throws). Every pointer is a device pointer unless its name says host; everything
// runs on the context's compute stream without waiting, except the function that says it waits.
//
// `flag` is one device word (a float's room holding an unsigned) in which a kernel marks the first
// bad position; FirstBadLabelGpu (loss_math.hpp) reads it back.
#pragma once

#include <cstdint>

#include "cortado/context.hpp"
#include "cortado/kernels/for_each.hpp"  // CORTADO_GPU_ONLY

namespace cortado {

// x: (num, dim); idx: count indices. y row k = x row static_cast<int>(idx[k]). An index outside
// [0, num) (or NaN) gives a row of zeros and marks k in flag. Waits for the GPU to check the
// indices: returns the first bad position (its value in *bad_value_host), or −1.
CORTADO_GPU_ONLY(int64_t BatchReindexForwardGpu(Context& ctx, int64_t num, int64_t count, int64_t dim, const float* idx,
                                                const float* x, float* y, float* flag, float* bad_value_host))
// dx row n = Σ over k with static_cast<int>(idx[k]) == n of dy row k, summed in increasing k (the
// CPU's order; no atomics); every element of dx is written.
CORTADO_GPU_ONLY(void BatchReindexBackwardGpu(Context& ctx, int64_t num, int64_t count, int64_t dim, const float* idx,
                                              const float* dy, float* dx))

}  // namespace cortado
