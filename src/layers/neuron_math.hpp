// neuron_math.hpp — the arithmetic of the neuron layers, once for both devices (kernels/for_each.hpp):
// ReLU, Sigmoid, TanH, AbsVal, BNLL, Power, Exp, Log, Threshold, Clip, ELU, Swish and PReLU. Each
// functor maps one element's values to its output, in float; the layer's .cpp runs it with Map or
// MapChannels, and cuda/neuron_math.cu instantiates it for the GPU. The math functions are C's float
// ones (expf, log1pf, …), which the host and the device both provide.
//
// Device-specific here: PReLU's slope gradient, a reduction (the CPU sums each channel in order, the
// GPU in chunks, cuda/neuron_math.cu).
#pragma once

#include <math.h>

#include <cstdint>

#include "cortado/context.hpp"
#include "cortado/kernels/arithmetic.hpp"     // Constant, Scaled, Product
#include "cortado/kernels/channel_sums.hpp"  // ChannelSumScratchFloats
#include "cortado/kernels/for_each.hpp"

namespace cortado::neuron {

// ---- ReLU: y = x > 0 ? x : slope·x;  dx = dy · (x > 0 ? 1 : slope) --------------------------------
struct ReLUForward {
  float slope;
  CORTADO_HOST_DEVICE float operator()(float x) const { return x > 0 ? x : slope * x; }
};
struct ReLUBackward {
  float slope;
  CORTADO_HOST_DEVICE float operator()(float x, float dy) const { return dy * (x > 0 ? 1.0f : slope); }
};

// ---- Sigmoid, TanH: backward from the top data y --------------------------------------------------
struct SigmoidForward {
  CORTADO_HOST_DEVICE float operator()(float x) const { return 1.0f / (1.0f + expf(-x)); }
};
struct SigmoidBackward {  // dy · y · (1 − y)
  CORTADO_HOST_DEVICE float operator()(float y, float dy) const { return dy * y * (1.0f - y); }
};
struct TanHForward {
  CORTADO_HOST_DEVICE float operator()(float x) const { return tanhf(x); }
};
struct TanHBackward {  // dy · (1 − y²)
  CORTADO_HOST_DEVICE float operator()(float y, float dy) const { return dy * (1.0f - y * y); }
};

// ---- AbsVal, BNLL -----------------------------------------------------------------------------------
struct AbsValForward {
  CORTADO_HOST_DEVICE float operator()(float x) const { return fabsf(x); }
};
struct AbsValBackward {  // dy · sign(x)
  CORTADO_HOST_DEVICE float operator()(float x, float dy) const { return dy * static_cast<float>((x > 0) - (x < 0)); }
};
struct BNLLForward {  // log(1 + e^x), as x + log(1 + e^−x) for x > 0
  CORTADO_HOST_DEVICE float operator()(float x) const { return x > 0 ? x + log1pf(expf(-x)) : log1pf(expf(x)); }
};
struct BNLLBackward {  // dy · e / (e + 1), e = e^min(x, 50)
  CORTADO_HOST_DEVICE float operator()(float x, float dy) const {
    const float e = expf(MinOf(x, 50.0f));
    return dy * e / (e + 1.0f);
  }
};

// ---- Power: u = shift + scale·x, y = u^power;  dx = dy · power·scale · u^(power−1) -----------------
CORTADO_HOST_DEVICE inline float PowUnlessOne(float u, float p) { return p == 1.0f ? u : powf(u, p); }
struct PowerForward {
  float power, scale, shift;
  CORTADO_HOST_DEVICE float operator()(float x) const { return PowUnlessOne(shift + scale * x, power); }
};
struct PowerBackward {
  float power, scale, shift;
  CORTADO_HOST_DEVICE float operator()(float x, float dy) const {
    return dy * (power * scale) * PowUnlessOne(shift + scale * x, power - 1.0f);
  }
};
// The constant cases (power·scale = 0 or power = 1) are kernels/arithmetic.hpp's Constant and Scaled.

// ---- Exp: y = outer · e^(inner·x);  dx = dy · y · inner --------------------------------------------
struct ExpForward {
  float inner, outer;
  CORTADO_HOST_DEVICE float operator()(float x) const { return outer * expf(inner * x); }
};
struct ExpBackward {
  float inner;
  CORTADO_HOST_DEVICE float operator()(float y, float dy) const { return dy * y * inner; }
};

// ---- Log: y = base_scale · ln(shift + scale·x);  dx = dy · num_scale / (shift + scale·x) -----------
struct LogForward {
  float scale, shift, base_scale;
  CORTADO_HOST_DEVICE float operator()(float x) const { return base_scale * logf(shift + scale * x); }
};
struct LogBackward {
  float scale, shift, num_scale;
  CORTADO_HOST_DEVICE float operator()(float x, float dy) const { return dy * (num_scale / (shift + scale * x)); }
};

// ---- Threshold: y = x > t ? 1 : 0.  Clip: y = max(lo, min(x, hi));  dx = dy · (lo ≤ x ≤ hi) ----------
struct ThresholdForward {
  float threshold;
  CORTADO_HOST_DEVICE float operator()(float x) const { return x > threshold ? 1.0f : 0.0f; }
};
struct ClipForward {
  float lo, hi;
  CORTADO_HOST_DEVICE float operator()(float x) const { return MaxOf(lo, MinOf(x, hi)); }
};
struct ClipBackward {
  float lo, hi;
  CORTADO_HOST_DEVICE float operator()(float x, float dy) const {
    return dy * static_cast<float>(x >= lo && x <= hi);
  }
};

// ---- ELU: y = x > 0 ? x : alpha·(e^x − 1);  dx = x > 0 ? dy : dy · (alpha + y) ---------------------
struct ELUForward {
  float alpha;
  CORTADO_HOST_DEVICE float operator()(float x) const { return x > 0 ? x : alpha * expm1f(x); }
};
struct ELUBackward {
  float alpha;
  CORTADO_HOST_DEVICE float operator()(float x, float y, float dy) const { return x > 0 ? dy : dy * (alpha + y); }
};

// ---- Swish: s = 1 / (1 + e^(−beta·x)) (kept for Backward), y = x·s (arithmetic.hpp's Product);
//      dx = dy · (beta·y + s·(1 − beta·y)) ------------------------------------------------------------
struct SwishSigmoid {
  float beta;
  CORTADO_HOST_DEVICE float operator()(float x) const { return 1.0f / (1.0f + expf(-beta * x)); }
};
struct SwishBackward {
  float beta;
  CORTADO_HOST_DEVICE float operator()(float y, float s, float dy) const {
    const float by = beta * y;
    return dy * (by + s * (1.0f - by));
  }
};

// ---- PReLU over (num, channels, dim), slope a_c (shared: a_0 for every channel) ----------------------
// y = max(x, 0) + a_c·min(x, 0);  dx = x > 0 ? dy : dy · a_c.
struct PReLUForward {
  const float* slope;  // on the context's device
  bool shared;
  CORTADO_HOST_DEVICE float operator()(int64_t c, float x) const {
    return MaxOf(x, 0.0f) + slope[shared ? 0 : c] * MinOf(x, 0.0f);
  }
};
struct PReLUBackward {
  const float* slope;
  bool shared;
  CORTADO_HOST_DEVICE float operator()(int64_t c, float x, float dy) const {
    return x > 0 ? dy : dy * slope[shared ? 0 : c];
  }
};
// The slope gradient's term, element i: dy·x where x ≤ 0, the product in float, added in double.
struct PReLUSlopeTerm {
  static constexpr int kSums = 1;
  const float* x;
  const float* dy;
  CORTADO_HOST_DEVICE void operator()(int64_t i, int64_t, double* sum) const {
    if (x[i] <= 0) sum[0] += dy[i] * x[i];
  }
};
// slope_diff[c] += Σ over the elements of channel c of dy·x·(x ≤ 0) (shared: slope_diff[0] += the sum
// over all elements), in double; the GPU's chunked sums use `scratch`, PReLUSlopeScratchFloats floats.
inline int PReLUSlopeScratchFloats(ChannelLayout l, bool shared) {
  return shared ? ChannelSumScratchFloats(1, 1, l.count(), 1)
                : ChannelSumScratchFloats(l.num, l.channels, l.spatial, 1);
}
CORTADO_GPU_ONLY(void PReLUSlopeGradGpu(Context& ctx, ChannelLayout l, bool shared, const float* x, const float* dy,
                                        float* scratch, float* slope_diff))

}  // namespace cortado::neuron
