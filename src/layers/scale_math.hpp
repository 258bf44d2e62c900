// scale_math.hpp — the arithmetic of Scale and Bias, once for both devices (kernels/for_each.hpp), over
// the bottom read as (outer, dim, inner), a ChannelLayout whose channel d is γ's or β's element d:
// y = x · γ[d] + β[d] (MapChannels), and the parameter gradients' per-d sums (ChannelSums). x, y and
// their gradients may be float or 16-bit storage (read as float, results rounded once); γ, β and the
// sums' results are float. scale.cpp and bias.cpp run them, and so do the convolutions' and the inner
// product's bias through AddBias and AddBiasGradient; cuda/scale_math.cu instantiates them for the GPU.
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

// Σ a · b over the elements of d, b null reading as 1; a and b of storage type T (float, BFloat16 or
// Float16), read as float. SumOfProducts{a, b} takes T from a (b may be nullptr).
template <typename T>
struct SumOfProducts {
  static constexpr int kSums = 1;
  const T* a;
  const T* b;
  CORTADO_HOST_DEVICE void operator()(int64_t i, int64_t, double* sum) const {
    const float v = ToFloat(a[i]);
    sum[0] += b ? static_cast<double>(v) * ToFloat(b[i]) : v;
  }
};
template <typename T, typename B>
SumOfProducts(const T*, B) -> SumOfProducts<T>;

// out[d] = (accumulate ? out[d] : 0) + Σ: a learned blob's diff accumulates, a bottom's is written.
struct StoreSum {
  bool accumulate;
  float* out;
  CORTADO_HOST_DEVICE void operator()(int64_t d, const double* total) const {
    out[d] = static_cast<float>(accumulate ? out[d] + total[0] : total[0]);
  }
};

// A layer's bias on its top: y[i] += bias[d], d the channel of element i in `l`, over y of storage type
// `type` (on the context's device).
inline void AddBias(Context& ctx, ChannelLayout l, DataType type, const float* bias, void* y) {
  VisitStorageType(type, [&](auto zero) {
    using T = decltype(zero);
    T* values = static_cast<T*>(y);
    MapChannels(ctx, l, ScaleBias{nullptr, bias}, values, static_cast<const T*>(values));
  });
}

// Its gradient: db[d] += Σ dy over channel d, dy of storage type `type` (`scratch`: ChannelSums's).
inline void AddBiasGradient(Context& ctx, ChannelLayout l, float* scratch, DataType type, const void* dy, float* db) {
  VisitStorageType(type, [&](auto zero) {
    using T = decltype(zero);
    ChannelSums(ctx, l, scratch, SumOfProducts{static_cast<const T*>(dy), nullptr}, StoreSum{true, db});
  });
}

}  // namespace cortado::scale
