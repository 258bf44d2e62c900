// kernels/activation.hpp — launchers of the GPU kernels behind Caffe's other element-wise layers:
// AbsVal, BNLL, Power, Exp, Log, Threshold, Clip, ELU, Swish and PReLU. No CUDA types, so the layers'
// .cpp files call them from Forward_gpu / Backward_gpu; all are defined in src/layers/cuda/activations.cu
// and, in a CPU-only build, in src/layers/no_gpu/activation_stub.cpp (throws). Every pointer is a
// device pointer; everything runs on the context's compute stream without waiting. n is the element
// count; y may be x and dx may be dy (in place) unless a comment says otherwise.
#pragma once

#include <cstdint>

#include "cortado/context.hpp"
#include "cortado/kernels/channel_sums.hpp"  // ChannelSumScratchFloats

namespace cortado {

// ---- AbsVal, BNLL ----------------------------------------------------------------------------------
void AbsValForwardGpu(Context& ctx, int64_t n, const float* x, float* y);                       // |x|
void AbsValBackwardGpu(Context& ctx, int64_t n, const float* x, const float* dy, float* dx);    // dy·sign(x)
// y = log(1 + e^x) (x > 0: x + log(1 + e^−x));  dx = dy · e^min(x,50) / (e^min(x,50) + 1).
void BNLLForwardGpu(Context& ctx, int64_t n, const float* x, float* y);
void BNLLBackwardGpu(Context& ctx, int64_t n, const float* x, const float* dy, float* dx);

// ---- Power, Exp, Log ---------------------------------------------------------------------------------
// Power: u = shift + scale·x, y = u^power;  dx = dy · power·scale · u^(power−1).
void PowerForwardGpu(Context& ctx, int64_t n, float power, float scale, float shift, const float* x, float* y);
void PowerBackwardGpu(Context& ctx, int64_t n, float power, float scale, float shift, const float* x,
                      const float* dy, float* dx);
// Exp: y = outer · e^(inner·x);  dx = dy · inner · y (from the top data).
void ExpForwardGpu(Context& ctx, int64_t n, float inner, float outer, const float* x, float* y);
void ExpBackwardGpu(Context& ctx, int64_t n, float inner, const float* y, const float* dy, float* dx);
// Log: y = base_scale · ln(shift + scale·x);  dx = dy · num_scale / (shift + scale·x).
void LogForwardGpu(Context& ctx, int64_t n, float scale, float shift, float base_scale, const float* x, float* y);
void LogBackwardGpu(Context& ctx, int64_t n, float scale, float shift, float num_scale, const float* x,
                    const float* dy, float* dx);

// ---- Threshold, Clip ---------------------------------------------------------------------------------
void ThresholdForwardGpu(Context& ctx, int64_t n, float threshold, const float* x, float* y);  // x > t ? 1 : 0
// y = max(lo, min(x, hi));  dx = dy · (lo ≤ x ≤ hi).
void ClipForwardGpu(Context& ctx, int64_t n, float lo, float hi, const float* x, float* y);
void ClipBackwardGpu(Context& ctx, int64_t n, float lo, float hi, const float* x, const float* dy, float* dx);

// ---- ELU, Swish --------------------------------------------------------------------------------------
// ELU: y = x > 0 ? x : alpha·(e^x − 1);  dx = dy · (x > 0 ? 1 : alpha + y).
void ELUForwardGpu(Context& ctx, int64_t n, float alpha, const float* x, float* y);
void ELUBackwardGpu(Context& ctx, int64_t n, float alpha, const float* x, const float* y, const float* dy,
                    float* dx);
// Swish: s = 1 / (1 + e^(−beta·x)) (kept for Backward), y = x·s;  dx = dy · (beta·y + s·(1 − beta·y)).
void SwishForwardGpu(Context& ctx, int64_t n, float beta, const float* x, float* s, float* y);
void SwishBackwardGpu(Context& ctx, int64_t n, float beta, const float* y, const float* s, const float* dy,
                      float* dx);

// ---- PReLU -------------------------------------------------------------------------------------------
// The bottom is (num, channels, dim); element i has channel c = (i / dim) % channels, and slope a_c
// (shared: a_0 for every channel).  y = max(x, 0) + a_c·min(x, 0);  dx = dy · (x > 0 ? 1 : a_c).
void PReLUForwardGpu(Context& ctx, int64_t n, int channels, int64_t dim, bool shared, const float* slope,
                     const float* x, float* y);
void PReLUBackwardGpu(Context& ctx, int64_t n, int channels, int64_t dim, bool shared, const float* slope,
                      const float* x, const float* dy, float* dx);
// slope_diff[c] += Σ over the elements of channel c of dy·x·(x ≤ 0) (shared: slope_diff[0] += the sum
// over all elements), in double. `scratch`: PReLUSlopeScratchFloats(...) floats of partial sums.
// Deterministic: fixed reduction order, no atomics.
void PReLUSlopeGradGpu(Context& ctx, int num, int channels, int64_t dim, bool shared, const float* x,
                       const float* dy, float* scratch, float* slope_diff);
inline int PReLUSlopeScratchFloats(int num, int channels, int64_t dim, bool shared) {
  return shared ? ChannelSumScratchFloats(1, 1, static_cast<int64_t>(num) * channels * dim, 1)
                : ChannelSumScratchFloats(num, channels, dim, 1);
}

}  // namespace cortado
