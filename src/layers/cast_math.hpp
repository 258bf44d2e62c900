// cast_math.hpp — converting values between storage types and image layouts on either device (the
// Cast layer's arithmetic): out[i] = the value of in[i], rounded to nearest-even where out is narrower,
// and moved between NCHW and NHWC order where the layouts differ.
#pragma once

#include "cortado/kernels/for_each.hpp"

namespace cortado {
namespace cast {

struct SameValue {
  CORTADO_HOST_DEVICE float operator()(float x) const { return x; }
};

// Element i of an N×C×H×W output, read from the input in the other order: to_nhwc, the output is
// channels-last and the input NCHW; else the reverse.
template <typename Out, typename In>
struct Transpose {
  Out* out;
  const In* in;
  int64_t channels, spatial;
  bool to_nhwc;
  CORTADO_HOST_DEVICE void operator()(int64_t i) const {
    if (to_nhwc) {  // i = (n·HW + s)·C + c
      const int64_t c = i % channels, rest = i / channels, s = rest % spatial, n = rest / spatial;
      out[i] = FromFloat<Out>(ToFloat(in[(n * channels + c) * spatial + s]));
    } else {  // i = (n·C + c)·HW + s
      const int64_t s = i % spatial, rest = i / spatial, c = rest % channels, n = rest / channels;
      out[i] = FromFloat<Out>(ToFloat(in[(n * spatial + s) * channels + c]));
    }
  }
};

// n values of In at `in` into `out`, in the same order, or transposed (`transpose`: channels and
// spatial of an N×C×H×W blob, to_nhwc giving the direction).
template <typename Out, typename In>
void Convert(Context& ctx, int64_t n, Out* out, const In* in, bool transpose, int64_t channels, int64_t spatial,
             bool to_nhwc) {
  if (transpose) {
    ForEach(ctx, n, Transpose<Out, In>{out, in, channels, spatial, to_nhwc});
  } else {
    Map(ctx, n, SameValue{}, out, in);
  }
}

template <typename Out>
void ConvertFrom(Context& ctx, int64_t n, Out* out, DataType in_type, const void* in, bool transpose, int64_t channels,
                 int64_t spatial, bool to_nhwc) {
  switch (in_type) {
    case DataType::kFloat:
      Convert(ctx, n, out, static_cast<const float*>(in), transpose, channels, spatial, to_nhwc);
      break;
    case DataType::kBFloat16:
      Convert(ctx, n, out, static_cast<const BFloat16*>(in), transpose, channels, spatial, to_nhwc);
      break;
    case DataType::kFloat16:
      Convert(ctx, n, out, static_cast<const Float16*>(in), transpose, channels, spatial, to_nhwc);
      break;
  }
}

// What a conversion does: the types at both ends, and, for a 4-D blob whose layout changes, the
// transpose (an N×C×H×W blob with C or H·W of 1 is the same in both orders).
struct Conversion {
  DataType out_type, in_type;
  bool transpose = false;
  int64_t channels = 1, spatial = 1;
  bool to_nhwc = false;
};

// n values at `in` as `c` says, into `out`, on the context's device.
inline void CastValues(Context& ctx, int64_t n, const Conversion& c, void* out, const void* in) {
  switch (c.out_type) {
    case DataType::kFloat:
      ConvertFrom(ctx, n, static_cast<float*>(out), c.in_type, in, c.transpose, c.channels, c.spatial, c.to_nhwc);
      break;
    case DataType::kBFloat16:
      ConvertFrom(ctx, n, static_cast<BFloat16*>(out), c.in_type, in, c.transpose, c.channels, c.spatial, c.to_nhwc);
      break;
    case DataType::kFloat16:
      ConvertFrom(ctx, n, static_cast<Float16*>(out), c.in_type, in, c.transpose, c.channels, c.spatial, c.to_nhwc);
      break;
  }
}

}  // namespace cast
}  // namespace cortado
