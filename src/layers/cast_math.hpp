// cast_math.hpp — converting values between storage types and image layouts on either device (the
// Cast layer's arithmetic): out[i] = the value of in[i], rounded to nearest-even where out is narrower,
// and moved between NCHW and NHWC order where the layouts differ; and a gradient of another type or
// order added into float sums (AddValues: the convolution's 16-bit weight gradient into its master's).
#pragma once

#include "cortado/kernels/for_each.hpp"

namespace cortado {
namespace cast {

struct SameValue {
  CORTADO_HOST_DEVICE float operator()(float x) const { return x; }
};

// Where element i of an N×C×H×W blob in one order lies in the other: i_nhwc true, i counts in NHWC
// order and the result in NCHW; else the reverse.
CORTADO_HOST_DEVICE inline int64_t OtherOrderIndex(int64_t i, int64_t channels, int64_t spatial, bool i_nhwc) {
  if (i_nhwc) {  // i = (n·HW + s)·C + c
    const int64_t c = i % channels, rest = i / channels, s = rest % spatial, n = rest / spatial;
    return (n * channels + c) * spatial + s;
  }
  // i = (n·C + c)·HW + s
  const int64_t s = i % spatial, rest = i / spatial, c = rest % channels, n = rest / channels;
  return (n * spatial + s) * channels + c;
}

// Element i of an N×C×H×W output, read from the input in the other order: to_nhwc, the output is
// channels-last and the input NCHW; else the reverse.
template <typename Out, typename In>
struct Transpose {
  Out* out;
  const In* in;
  int64_t channels, spatial;
  bool to_nhwc;
  CORTADO_HOST_DEVICE void operator()(int64_t i) const {
    out[i] = FromFloat<Out>(ToFloat(in[OtherOrderIndex(i, channels, spatial, to_nhwc)]));
  }
};

// out[i] += in[j], a gradient computed in another storage type (and maybe order) added to float sums:
// j = i or, from_nhwc, element i's place in NHWC order (out is NCHW).
template <typename In>
struct AddConverted {
  float* out;
  const In* in;
  int64_t channels, spatial;
  bool from_nhwc;
  CORTADO_HOST_DEVICE void operator()(int64_t i) const {
    out[i] += ToFloat(in[from_nhwc ? OtherOrderIndex(i, channels, spatial, false) : i]);
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

// out[i] += the value of in's element i (n of them, of in_type), read from NHWC order when from_nhwc
// (an N×C×H×W blob of `channels` and `spatial`), on the context's device.
inline void AddValues(Context& ctx, int64_t n, DataType in_type, const void* in, bool from_nhwc, int64_t channels,
                      int64_t spatial, float* out) {
  VisitStorageType(in_type, [&](auto zero) {
    using In = decltype(zero);
    ForEach(ctx, n, AddConverted<In>{out, static_cast<const In*>(in), channels, spatial, from_nhwc});
  });
}

}  // namespace cast
}  // namespace cortado
