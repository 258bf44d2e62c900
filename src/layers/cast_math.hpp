// cast_math.hpp — converting values between storage types on either device (the Cast layer's
// arithmetic): out[i] = the value of in[i], rounded to nearest-even where out is narrower.
#pragma once

#include "cortado/kernels/for_each.hpp"

namespace cortado {
namespace cast {

struct SameValue {
  CORTADO_HOST_DEVICE float operator()(float x) const { return x; }
};

template <typename Out>
void CastFrom(Context& ctx, int64_t n, Out* out, DataType in_type, const void* in) {
  switch (in_type) {
    case DataType::kFloat: Map(ctx, n, SameValue{}, out, static_cast<const float*>(in)); break;
    case DataType::kBFloat16: Map(ctx, n, SameValue{}, out, static_cast<const BFloat16*>(in)); break;
    case DataType::kFloat16: Map(ctx, n, SameValue{}, out, static_cast<const Float16*>(in)); break;
  }
}

// n values of in_type at `in` as out_type at `out`, on the context's device.
inline void CastValues(Context& ctx, int64_t n, DataType out_type, void* out, DataType in_type, const void* in) {
  switch (out_type) {
    case DataType::kFloat: CastFrom(ctx, n, static_cast<float*>(out), in_type, in); break;
    case DataType::kBFloat16: CastFrom(ctx, n, static_cast<BFloat16*>(out), in_type, in); break;
    case DataType::kFloat16: CastFrom(ctx, n, static_cast<Float16*>(out), in_type, in); break;
  }
}

}  // namespace cast
}  // namespace cortado
