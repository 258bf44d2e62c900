// scale_math.hpp — the arithmetic of Scale and Bias, once for both devices (kernels/for_each.hpp), over
// the bottom read as (outer, dim, inner), a ChannelLayout whose channel d is γ's or β's element d:
// y = x · γ[d] + β[d] (MapChannels), and the parameter gradients' per-d sums (ChannelSums).
// scale.cpp and bias.cpp run them; cuda/scale_math.cu instantiates them for the GPU.
#pragma once

#include <cstdint>

#include "cortado/kernels/for_each.hpp"

namespace cortado::scale {

// y = x · scale[d] + bias[d], a null scale reading as 1 and a null bias as 0 (on the context's device).
struct ScaleBias {
  const float* scale;
  const float* bias;
  CORTADO_HOST_DEVICE float operator()(int64_t d, float x) const {
    const float v = scale ? x * scale[d] : x;
    return bias ? v + bias[d] : v;
  }
};

// Σ a · b over the elements of d, b null reading as 1.
struct SumOfProducts {
  static constexpr int kSums = 1;
  const float* a;
  const float* b;
  CORTADO_HOST_DEVICE void operator()(int64_t i, int64_t, double* sum) const {
    sum[0] += b ? static_cast<double>(a[i]) * b[i] : a[i];
  }
};

// out[d] = (accumulate ? out[d] : 0) + Σ: a learned blob's diff accumulates, a bottom's is written.
struct StoreSum {
  bool accumulate;
  float* out;
  CORTADO_HOST_DEVICE void operator()(int64_t d, const double* total) const {
    out[d] = static_cast<float>(accumulate ? out[d] + total[0] : total[0]);
  }
};

}  // namespace cortado::scale
