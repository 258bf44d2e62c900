// kernels/shape_ops.hpp — launchers of the GPU kernels behind the layers that crop, repeat, reduce
// or rank a blob (Crop, Tile, Reduction, ArgMax). No CUDA types, so the layers' .cpp files call them
// from Forward_gpu / Backward_gpu; all are defined in src/layers/cuda/shape_ops.cu (CORTADO_GPU_ONLY:
// in a CPU-only build each throws). Every float pointer is a device pointer;
// the int arrays are host arrays of num_axes values. Everything runs on the context's compute stream
// without waiting.
#pragma once

#include <cstdint>

#include "cortado/context.hpp"
#include "cortado/kernels/for_each.hpp"  // CORTADO_GPU_ONLY

namespace cortado {

// ---- Crop ----------------------------------------------------------------------------------------
// For every top coordinate c (top_shape), b(c) = the bottom element at c + offsets (bottom_shape).
// Forward (backward false): top[c] = bottom[b(c)]. Backward (backward true): bottom[b(c)] = top[c],
// other bottom elements untouched (the caller zeroes them first). src is the bottom in forward and
// the top in backward; dst the other one.
CORTADO_GPU_ONLY(void CropCopyGpu(Context& ctx, int num_axes, const int* top_shape, const int* bottom_shape,
                                  const int* offsets, const float* src, float* dst, bool backward))

// ---- Tile ----------------------------------------------------------------------------------------
// y[(o·tiles + t)·inner + j] = x[o·inner + j];  dx[o·inner + j] = Σ_t dy[(o·tiles + t)·inner + j].
CORTADO_GPU_ONLY(void TileForwardGpu(Context& ctx, int64_t outer, int64_t inner, int tiles, const float* x, float* y))
CORTADO_GPU_ONLY(void TileBackwardGpu(Context& ctx, int64_t outer, int64_t inner, int tiles, const float* dy,
                                      float* dx))

// ---- Reduction -----------------------------------------------------------------------------------
// op: ReductionParameter's enum value (1 SUM, 2 ASUM, 3 SUMSQ, 4 MEAN). For each of num rows of dim
// values: y[i] = coeff · Σ_j f(x[i·dim + j]) with f = x, |x|, x², x (coeff already holds 1/dim for
// MEAN), summed in double. Backward: dx[i·dim + j] = coeff · dy[i] · f'(x) with f' = 1, sign(x), 2x, 1.
CORTADO_GPU_ONLY(void ReductionForwardGpu(Context& ctx, int op, int64_t num, int64_t dim, float coeff, const float* x,
                                          float* y))
CORTADO_GPU_ONLY(void ReductionBackwardGpu(Context& ctx, int op, int64_t num, int64_t dim, float coeff, const float* x,
                                           const float* dy, float* dx))

// ---- ArgMax --------------------------------------------------------------------------------------
// num = count / dim searches; search i reads x[(i / stride · dim + j) · stride + i % stride], j < dim,
// and ranks (value, j) pairs in decreasing order (equal values: the higher j first, as Caffe's
// partial_sort with std::greater). The r-th pick (r < top_k) is written as in Caffe's ArgMaxLayer:
// with pairs_layout (no axis given, out_max_val): y[2·i·top_k + r] = index, y[2·i·top_k + top_k + r] =
// value; otherwise y[(i / stride · top_k + r) · stride + i % stride] = value if write_values else index.
CORTADO_GPU_ONLY(void ArgMaxForwardGpu(Context& ctx, int64_t num, int dim, int64_t stride, int top_k, bool pairs_layout,
                                       bool write_values, const float* x, float* y))

}  // namespace cortado
