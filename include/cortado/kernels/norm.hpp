// kernels/norm.hpp — launchers of the GPU kernels behind the normalisation layers: LRN, BatchNorm,
// Scale and Bias. No CUDA types, so the layers' .cpp files call them from Forward_gpu / Backward_gpu;
// each is defined in src/layers/cuda/<layer>.cu (Bias's in scale.cu) and, in a CPU-only build, in
// src/layers/no_gpu/norm_stub.cpp (throws). Every pointer is a device pointer; everything runs on the
// context's compute stream without waiting.
#pragma once

#include <cstdint>

#include "cortado/context.hpp"
#include "cortado/kernels/channel_sums.hpp"  // ChannelSumScratchFloats

namespace cortado {

// ---- LRN (lrn.cu) --------------------------------------------------------------------------------
// x, y, scale, dy, dx: (num, channels, height, width). The window of an element is the `size`
// channels centred on it (across) or the size × size square centred on it in its own plane
// (within), clipped to the blob (outside counts as zero); size is odd. With S = Σ_window x²:
//   scale = k + coeff · S,   y = x · scale^(−beta)
//   dx = dy · scale^(−beta) − 2 · beta · coeff · x · Σ_window dy · y / scale
// (the windows are symmetric, so the window of the sum is the element's own). No two of the arrays
// may alias.
struct LrnShape {
  int64_t num;
  int channels, height, width;
  int size;
  bool across;  // ACROSS_CHANNELS, else WITHIN_CHANNEL
  float k, coeff, beta;
};
void LrnForwardGpu(Context& ctx, const LrnShape& s, const float* x, float* scale, float* y);
void LrnBackwardGpu(Context& ctx, const LrnShape& s, const float* x, const float* y, const float* scale,
                    const float* dy, float* dx);

// ---- BatchNorm (batch_norm.cu) -------------------------------------------------------------------
// x, y, x_norm, dy, dx: (num, channels, spatial); x_norm is x̂, which Forward writes as y. mean, std:
// `channels` values each. `scratch`: the chunked sums' partials, ChannelSumScratchFloats(num, channels,
// spatial, 2) floats.
// Batch statistics (chunked channel sums in double, kernels/channel_sums.hpp): mean = Σx / m,
// var = Σ(x − mean)² / m over the m = num · spatial values of the channel, std = sqrt(var + eps), and
// the running sums running_mean = running_mean · maf + mean,
// running_var = running_var · maf + correction · var, *factor = *factor · maf + 1.
void BatchNormBatchStatsGpu(Context& ctx, int64_t num, int64_t channels, int64_t spatial, const float* x,
                            float eps, float maf, float correction, float* running_mean, float* running_var,
                            float* factor, float* mean, float* std, float* scratch);
// Global statistics: with f = (*factor == 0 ? 0 : 1 / *factor), mean = f · running_mean and
// std = sqrt(f · running_var + eps).
void BatchNormGlobalStatsGpu(Context& ctx, int64_t channels, float eps, const float* running_mean,
                             const float* running_var, const float* factor, float* mean, float* std);
// y = x̂ = (x − mean[c]) / std[c]. y may be x.
void BatchNormForwardGpu(Context& ctx, int64_t num, int64_t channels, int64_t spatial, const float* x,
                         const float* mean, const float* std, float* y);
// global: dx = dy / std[c]; else dx = (dy − mean(dy) − x_norm · mean(dy · x_norm)) / std[c], the two
// means per channel (chunked sums in double) kept in `sums` (2 · channels floats); x_norm is the
// forward's y. dx may be dy.
void BatchNormBackwardGpu(Context& ctx, int64_t num, int64_t channels, int64_t spatial, bool global,
                          const float* dy, const float* x_norm, const float* std, float* sums, float* scratch,
                          float* dx);

// ---- Scale and Bias (scale.cu) -------------------------------------------------------------------
// x, y: (outer, dim, inner). y = x · scale[d] + bias[d], where a null scale reads as 1 and a null
// bias as 0. y may be x.
void ScaleBiasForwardGpu(Context& ctx, int64_t outer, int64_t dim, int64_t inner, const float* x,
                         const float* scale, const float* bias, float* y);
// out[d] = (accumulate ? out[d] : 0) + Σ_{o, i} a · b over (outer, inner), b null reading as 1
// (chunked sums in double; `scratch`: ChannelSumScratchFloats(outer, dim, inner, 1) floats).
void ChannelSumGpu(Context& ctx, int64_t outer, int64_t dim, int64_t inner, const float* a, const float* b,
                   bool accumulate, float* scratch, float* out);

}  // namespace cortado
