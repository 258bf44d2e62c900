// shape_ops_math.hpp — the arithmetic of the layers that crop, repeat, reduce or rank a blob (Crop,
// Tile, Reduction, ArgMax), once for both devices (kernels/for_each.hpp). crop.cpp, tile.cpp,
// reduction.cpp and argmax.cpp run these functors; cuda/shape_ops_math.cu instantiates them for the GPU.
//   Crop:      for every top coordinate c, b(c) = the bottom element at c + offsets; forward
//              top[c] = bottom[b(c)], backward bottom[b(c)] = top[c] (ForEach over the top's elements).
//   Tile:      y[(o·tiles + t)·inner + j] = x[o·inner + j];  dx[o·inner + j] = Σ_t dy[(o·tiles + t)·inner + j],
//              added in float in increasing t (ForEach over y's, then dx's, elements).
//   Reduction: per row of dim values y = coeff·Σ f(x) with f = x, |x|, x², x (MEAN: coeff holds 1/dim),
//              summed in double (RowSums, row_sums.hpp); dx = coeff·dy·f'(x) with f' = 1, sign(x), 2x, 1
//              (MapChannels over the rows).
//   ArgMax:    per search, the top_k (value, index) pairs in decreasing order, equal values the higher
//              index first (Caffe's partial_sort with std::greater), picked one rank at a time (ForEach
//              over the searches).
#pragma once

#include <math.h>

#include <cstdint>

#include "cortado/blob.hpp"  // Blob::kMaxAxes
#include "cortado/kernels/for_each.hpp"

namespace cortado::shape_ops {

// ---- Crop ----------------------------------------------------------------------------------------
// The top's shape and, per axis, the bottom's stride; base = the bottom index of the top's origin
// (Σ offset·stride).
struct CropGeometry {
  int num_axes = 0;
  int64_t top_shape[Blob::kMaxAxes] = {};
  int64_t bottom_stride[Blob::kMaxAxes] = {};
  int64_t base = 0;
};

// From the top's and the bottom's shapes and the offsets (num_axes values each).
inline CropGeometry MakeCropGeometry(int num_axes, const int* top_shape, const int* bottom_shape,
                                     const int* offsets) {
  CropGeometry g;
  g.num_axes = num_axes;
  int64_t stride = 1;
  for (int d = num_axes - 1; d >= 0; --d) {
    g.top_shape[d] = top_shape[d];
    g.bottom_stride[d] = stride;
    g.base += offsets[d] * stride;
    stride *= bottom_shape[d];
  }
  return g;
}

// Index i of the top: forward dst[i] = src[b(i)] (src the bottom), backward dst[b(i)] = src[i] (src
// the top's diff, dst the bottom's).
struct CropCopy {
  CropGeometry g;
  const float* src;
  float* dst;
  bool backward;
  CORTADO_HOST_DEVICE void operator()(int64_t i) const {
    int64_t rest = i, b = g.base;
    for (int d = g.num_axes - 1; d >= 0; --d) {
      b += (rest % g.top_shape[d]) * g.bottom_stride[d];
      rest /= g.top_shape[d];
    }
    if (backward) {
      dst[b] = src[i];
    } else {
      dst[i] = src[b];
    }
  }
};

// ---- Tile ----------------------------------------------------------------------------------------
struct TileForward {  // index i of y
  int64_t inner;
  int tiles;
  const float* x;
  float* y;
  CORTADO_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t j = i % inner, o = i / inner / tiles;
    y[i] = x[o * inner + j];
  }
};

struct TileBackward {  // index i of dx: the copies' dy added in order, from the first
  int64_t inner;
  int tiles;
  const float* dy;
  float* dx;
  CORTADO_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t j = i % inner, o = i / inner;
    const float* row = dy + o * tiles * inner + j;
    float sum = row[0];
    for (int t = 1; t < tiles; ++t) sum += row[t * inner];
    dx[i] = sum;
  }
};

// ---- Reduction -----------------------------------------------------------------------------------
// op is ReductionParameter's enum value: 1 SUM, 2 ASUM, 3 SUMSQ, 4 MEAN.
constexpr int kReductionAsum = 2;
constexpr int kReductionSumSq = 3;

struct ReductionTerm {  // f(x) of element i, in double
  static constexpr int kSums = 1;
  int op;
  const float* x;
  CORTADO_HOST_DEVICE void operator()(int64_t i, int64_t, double* sum) const {
    const double v = x[i];
    sum[0] += op == kReductionAsum ? fabs(v) : op == kReductionSumSq ? v * v : v;
  }
};

struct StoreReduction {  // y[row] = coeff · Σ
  float coeff;
  float* y;
  CORTADO_HOST_DEVICE void operator()(int64_t row, const double* total) const {
    y[row] = static_cast<float>(coeff * total[0]);
  }
};

// ASUM and SUMSQ: dx = coeff·dy[row] · (sign(x) | 2x), over the ChannelLayout (1, rows, dim).
struct ReductionBackward {
  int op;
  float coeff;
  const float* dy;
  CORTADO_HOST_DEVICE float operator()(int64_t row, float x) const {
    const float g = coeff * dy[row];
    return op == kReductionAsum ? g * static_cast<float>((0 < x) - (x < 0)) : g * 2 * x;
  }
};

// SUM and MEAN: dx = coeff·dy[row] (x is not read).
struct ReductionBackwardConstant {
  float coeff;
  const float* dy;
  CORTADO_HOST_DEVICE float operator()(int64_t row) const { return coeff * dy[row]; }
};

// ---- ArgMax --------------------------------------------------------------------------------------
// (a, ia) ranks before (b, ib) as std::greater<std::pair<float, int>> orders them: the larger value,
// or among equal values the larger index.
CORTADO_HOST_DEVICE inline bool RanksBefore(float a, int ia, float b, int ib) {
  return b < a || (!(a < b) && ib < ia);
}

// Search i reads x[(i / stride · dim + j) · stride + i % stride], j < dim, and writes its r-th pick
// (r < top_k) as Caffe's ArgMaxLayer does: with pairs_layout (no axis, out_max_val)
// y[2·i·top_k + r] = index and y[2·i·top_k + top_k + r] = value; otherwise
// y[(i / stride · top_k + r) · stride + i % stride] = value if write_values, else index.
struct ArgMaxSearch {
  int dim;
  int64_t stride;
  int top_k;
  bool pairs_layout, write_values;
  const float* x;
  float* y;
  CORTADO_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t outer = i / stride, inner = i % stride;
    const float* base = x + outer * dim * stride + inner;
    float prev = 0;
    int prev_index = -1;  // -1: no pick yet
    for (int r = 0; r < top_k; ++r) {
      // The best pair that ranks after the previous pick.
      float best = 0;
      int best_index = -1;
      for (int j = 0; j < dim; ++j) {
        const float v = base[j * stride];
        if (prev_index >= 0 && !RanksBefore(prev, prev_index, v, j)) continue;
        if (best_index < 0 || RanksBefore(v, j, best, best_index)) {
          best = v;
          best_index = j;
        }
      }
      if (pairs_layout) {
        y[2 * i * top_k + r] = static_cast<float>(best_index);
        y[2 * i * top_k + top_k + r] = best;
      } else {
        y[(outer * top_k + r) * stride + inner] = write_values ? best : static_cast<float>(best_index);
      }
      prev = best;
      prev_index = best_index;
    }
  }
};

}  // namespace cortado::shape_ops
