// batch_norm_math.hpp — BatchNorm's arithmetic, once for both devices (kernels/for_each.hpp): the
// element-wise steps as functors that MapChannels runs, and the per-channel sums as terms (what element
// i of channel c adds, in double) with the finishing steps that turn a channel's totals into what the
// layer keeps, which ChannelSums runs. The activations and their gradients may be float or 16-bit
// storage (read as float, the results rounded once); the statistics are float. batch_norm.hpp runs
// them; cuda/batch_norm_math.cu instantiates them for the GPU, for each storage type. Device-specific:
// nothing but the order of the sums' additions (for_each.hpp).
#pragma once

#include <math.h>

#include <cstdint>

#include "cortado/kernels/channel_sums.hpp"  // SumOfValues
#include "cortado/kernels/for_each.hpp"

namespace cortado::batch_norm {

// ---- the sums: term(i, c, sum) adds element i's share to sum[0 .. kSums) ------------------------------
// Each reads x, dy and x̂ of the blobs' storage type T (float, BFloat16 or Float16) as float; the
// deduction guides take T from the pointers (SumOfSquares{x, mean}).
// Σx: kernels/channel_sums.hpp's SumOfValues.
template <typename T>
struct SumOfSquares {  // Σ(x − mean)², the difference taken in float
  static constexpr int kSums = 1;
  const T* x;
  const float* mean;
  CORTADO_HOST_DEVICE void operator()(int64_t i, int64_t c, double* sum) const {
    const float d = ToFloat(x[i]) - mean[c];
    sum[0] += static_cast<double>(d) * d;
  }
};
template <typename T>
SumOfSquares(const T*, const float*) -> SumOfSquares<T>;
template <typename T>
struct SumOfDyAndDyX {  // Σdy, Σdy·x̂
  static constexpr int kSums = 2;
  const T* dy;
  const T* x_norm;
  CORTADO_HOST_DEVICE void operator()(int64_t i, int64_t, double* sum) const {
    const float g = ToFloat(dy[i]);
    sum[0] += g;
    sum[1] += static_cast<double>(g) * ToFloat(x_norm[i]);
  }
};
template <typename T>
SumOfDyAndDyX(const T*, const T*) -> SumOfDyAndDyX<T>;

// ---- what a channel's totals become -------------------------------------------------------------------
struct StoreMean {  // mean = Σx / m
  double m;
  float* mean;
  CORTADO_HOST_DEVICE void operator()(int64_t c, const double* total) const {
    mean[c] = static_cast<float>(total[0] / m);
  }
};
// var = Σ(x − mean)² / m: std = sqrt(var + eps), the running sums running_mean = running_mean · maf +
// mean and running_var = running_var · maf + correction · var; channel 0 also the weight,
// *factor = *factor · maf + 1.
struct StoreStats {
  double m;
  float eps, maf, correction;
  const float* mean;
  float *std, *running_mean, *running_var, *factor;
  CORTADO_HOST_DEVICE void operator()(int64_t c, const double* total) const {
    const float var = static_cast<float>(total[0] / m);
    std[c] = sqrtf(var + eps);
    running_mean[c] = running_mean[c] * maf + mean[c];
    running_var[c] = running_var[c] * maf + correction * var;
    if (c == 0) *factor = *factor * maf + 1.0f;
  }
};
struct StoreMeans {  // means[c] = Σdy / m, means[channels + c] = Σdy·x̂ / m
  double m;
  int64_t channels;
  float* means;
  CORTADO_HOST_DEVICE void operator()(int64_t c, const double* total) const {
    means[c] = static_cast<float>(total[0] / m);
    means[channels + c] = static_cast<float>(total[1] / m);
  }
};

// ---- global statistics: with f = (weight == 0 ? 0 : 1 / weight), mean = f · running_mean and
// std = sqrt(f · running_var + eps); weight is the third blob's one value, on the context's device -----
CORTADO_HOST_DEVICE inline float GlobalFactor(const float* weight) { return *weight == 0 ? 0.0f : 1.0f / *weight; }
struct GlobalMean {
  const float* weight;
  CORTADO_HOST_DEVICE float operator()(float running_mean) const { return GlobalFactor(weight) * running_mean; }
};
struct GlobalStd {
  const float* weight;
  float eps;
  CORTADO_HOST_DEVICE float operator()(float running_var) const {
    return sqrtf(GlobalFactor(weight) * running_var + eps);
  }
};

// ---- element-wise, per channel (MapChannels) ------------------------------------------------------------
struct Normalize {  // y = x̂ = (x − mean[c]) / std[c]
  const float* mean;
  const float* std;
  CORTADO_HOST_DEVICE float operator()(int64_t c, float x) const { return (x - mean[c]) / std[c]; }
};
// Batch statistics: dx = (dy − mean(dy) − x̂ · mean(dy · x̂)) / std[c], the means kept as StoreMeans
// leaves them.
struct Backward {
  const float* std;
  const float* means;
  int64_t channels;
  CORTADO_HOST_DEVICE float operator()(int64_t c, float dy, float x_norm) const {
    return (dy - means[c] - x_norm * means[channels + c]) / std[c];
  }
};
struct GlobalBackward {  // dx = dy / std[c]
  const float* std;
  CORTADO_HOST_DEVICE float operator()(int64_t c, float dy) const { return dy / std[c]; }
};

}  // namespace cortado::batch_norm
