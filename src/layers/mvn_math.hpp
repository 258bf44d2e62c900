// mvn_math.hpp — MVN's arithmetic, once for both devices (kernels/for_each.hpp), over the bottom read as
// rows × dim: the per-row sums as terms with the finishing steps that turn a row's totals into what
// the layer keeps (RowSums, row_sums.hpp), and the element-wise steps as functors of the row that
// MapChannels runs over the ChannelLayout (1, rows, dim). mvn.cpp runs them; cuda/mvn_math.cu
// instantiates them for the GPU.
//   Forward:  mean = Σx / dim (double sums), y = x − mean;  with normalize_variance
//             s = sqrt(Σy² / dim) + eps (kept in scale[row] for Backward), y = y / s.
//   Backward: normalize_variance: dx = (dy − (1/dim)·(Σ(y·dy)·y + Σdy)) / s  (Caffe's MVN gradient);
//             otherwise dx = dy − Σdy / dim.
// `stats` holds two floats per row for a call: the mean in Forward; Σ(y·dy), Σdy (or Σdy / dim
// without normalize_variance) in Backward.
#pragma once

#include <math.h>

#include <cstdint>

#include "cortado/kernels/channel_sums.hpp"  // SumOfValues
#include "cortado/kernels/for_each.hpp"

namespace cortado::mvn {

// ---- Forward ------------------------------------------------------------------------------------
// Σx: kernels/channel_sums.hpp's SumOfValues.
struct StoreMean {  // stats[2·row] = Σx / dim
  int64_t dim;
  float* stats;
  CORTADO_HOST_DEVICE void operator()(int64_t row, const double* total) const {
    stats[2 * row] = static_cast<float>(total[0] / dim);
  }
};
struct Center {  // y = x − mean
  const float* stats;
  CORTADO_HOST_DEVICE float operator()(int64_t row, float x) const { return x - stats[2 * row]; }
};
struct SumOfSquares {  // Σy², y already centred
  static constexpr int kSums = 1;
  const float* y;
  CORTADO_HOST_DEVICE void operator()(int64_t i, int64_t, double* sum) const {
    sum[0] += static_cast<double>(y[i]) * y[i];
  }
};
struct StoreScale {  // scale[row] = sqrt(Σy² / dim) + eps
  int64_t dim;
  float eps;
  float* scale;
  CORTADO_HOST_DEVICE void operator()(int64_t row, const double* total) const {
    scale[row] = sqrtf(static_cast<float>(total[0] / dim)) + eps;
  }
};
struct Normalize {  // y = y / s
  const float* scale;
  CORTADO_HOST_DEVICE float operator()(int64_t row, float y) const { return y / scale[row]; }
};

// ---- Backward -----------------------------------------------------------------------------------
struct GradSums {  // Σdy, and with normalize_variance Σ(y·dy)
  static constexpr int kSums = 2;
  bool normalize_variance;
  const float* y;
  const float* dy;
  CORTADO_HOST_DEVICE void operator()(int64_t i, int64_t, double* sum) const {
    sum[0] += dy[i];
    if (normalize_variance) sum[1] += static_cast<double>(y[i]) * dy[i];
  }
};
struct StoreGradSums {  // normalize_variance: stats = (Σ(y·dy), Σdy); otherwise stats[2·row] = Σdy / dim
  bool normalize_variance;
  int64_t dim;
  float* stats;
  CORTADO_HOST_DEVICE void operator()(int64_t row, const double* total) const {
    if (normalize_variance) {
      stats[2 * row] = static_cast<float>(total[1]);
      stats[2 * row + 1] = static_cast<float>(total[0]);
    } else {
      stats[2 * row] = static_cast<float>(total[0] / dim);
    }
  }
};
struct NormalizedGrad {  // dx = (dy − inv_dim·(a·y + b)) / s, a = Σ(y·dy), b = Σdy
  float inv_dim;
  const float* stats;
  const float* scale;
  CORTADO_HOST_DEVICE float operator()(int64_t row, float dy, float y) const {
    const float a = stats[2 * row], b = stats[2 * row + 1];
    return (dy - inv_dim * (a * y + b)) / scale[row];
  }
};
struct CenteredGrad {  // dx = dy − Σdy / dim
  const float* stats;
  CORTADO_HOST_DEVICE float operator()(int64_t row, float dy) const { return dy - stats[2 * row]; }
};

}  // namespace cortado::mvn
