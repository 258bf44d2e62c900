// kernels/loss.hpp — launchers of the GPU code behind SigmoidCrossEntropyLoss, ContrastiveLoss,
// HingeLoss and MultinomialLogisticLoss (src/layers/cuda/losses.cu; CORTADO_GPU_ONLY: in a CPU-only
// build each throws). No CUDA types. Every pointer is a device
// pointer unless its name says host; everything runs on the context's compute stream without
// waiting, except the functions that say they wait. Losses are summed in double in a fixed order and
// written to the loss top on the device; the backward kernels read dloss (the loss top's diff) on the
// device.
#pragma once

#include <cstdint>
#include <string>

#include "cortado/context.hpp"
#include "cortado/kernels/for_each.hpp"  // CORTADO_GPU_ONLY
#include "cortado/error.hpp"

namespace cortado {

// Floats of the scratch the loss kernels share between forward and backward (block partial sums,
// the normalizer, the bad-label flag).
constexpr int64_t kLossWorkFloats = 1024;

// ---- SigmoidCrossEntropyLoss ---------------------------------------------------------------------
// x: n scores; t: n targets. *loss = Σ [max(x, 0) − x·t + log(1 + e^−|x|)] / m over the positions not
// ignored (has_ignore and static_cast<int>(t) == ignore_label), where m is their count when
// by_valid_count, else `normalizer`; m is at least 1 and is kept in work for the backward pass.
CORTADO_GPU_ONLY(void SigmoidCrossEntropyLossForwardGpu(Context& ctx, int64_t n, const float* x, const float* t,
                                                        bool has_ignore, int ignore_label, bool by_valid_count,
                                                        double normalizer, float* work, float* loss))
// dx = (sigmoid(x) − t) · dloss[0] / m with the forward's m; 0 at ignored positions.
CORTADO_GPU_ONLY(void SigmoidCrossEntropyLossBackwardGpu(Context& ctx, int64_t n, const float* x, const float* t,
                                                         bool has_ignore, int ignore_label, const float* dloss,
                                                         const float* work, float* dx))

// ---- ContrastiveLoss -----------------------------------------------------------------------------
// A pair is similar when static_cast<int>(y) != 0 (NaN and values outside int's range count as
// similar, as x86 converts them to INT_MIN).
// a, b: num × channels; y: num pair labels. dist_sq[i] = ‖a_i − b_i‖² (summed in float over c in
// order, kept for the backward pass); *loss = Σ_i term_i / (2·num), term as contrastive_loss.cpp says.
CORTADO_GPU_ONLY(void ContrastiveLossForwardGpu(Context& ctx, int64_t num, int64_t channels, const float* a,
                                                const float* b, const float* y, float margin, bool legacy,
                                                float* dist_sq, float* work, float* loss))
// dx_i = the gradient contrastive_loss.cpp states, times sign: +1 for a, −1 for b.
CORTADO_GPU_ONLY(void ContrastiveLossBackwardGpu(Context& ctx, int64_t num, int64_t channels, const float* a,
                                                 const float* b, const float* y, const float* dist_sq, float margin,
                                                 bool legacy, const float* dloss, float sign, float* dx))

// ---- HingeLoss -----------------------------------------------------------------------------------
// x: num × dim scores; label: num class indices. With v = −x at the label and x elsewhere and
// m = max(0, 1 + v): *loss = Σ m / num (L1) or Σ m² / num (l2). Waits for the GPU to check the
// labels: returns the first sample whose label is outside [0, dim), or −1, as FirstBadLabelGpu.
CORTADO_GPU_ONLY(int64_t HingeLossForwardGpu(Context& ctx, int64_t num, int64_t dim, const float* x, const float* label,
                                             bool l2, float* work, float* loss, float* bad_value_host))
// dx = ±(L1: [m > 0]; L2: 2m) · dloss[0] / num, − at the label and + elsewhere.
CORTADO_GPU_ONLY(void HingeLossBackwardGpu(Context& ctx, int64_t num, int64_t dim, const float* x, const float* label,
                                           bool l2, const float* dloss, float* dx))

// ---- MultinomialLogisticLoss ---------------------------------------------------------------------
// The smallest probability whose log is taken (Caffe's kLOG_THRESHOLD).
constexpr float kMultinomialLogThreshold = 1e-20f;
// prob: num × dim; label: num class indices. *loss = −Σ log(max(prob[label], 1e-20)) / num. Waits for
// the GPU to check the labels: returns the first bad sample or −1, as FirstBadLabelGpu.
CORTADO_GPU_ONLY(int64_t MultinomialLogisticLossForwardGpu(Context& ctx, int64_t num, int64_t dim, const float* prob,
                                                           const float* label, float* work, float* loss,
                                                           float* bad_value_host))
// dprob = −dloss[0] / (num · max(prob, 1e-20)) at each sample's label, 0 elsewhere.
CORTADO_GPU_ONLY(void MultinomialLogisticLossBackwardGpu(Context& ctx, int64_t num, int64_t dim, const float* prob,
                                                         const float* label, const float* dloss, float* dprob))

}  // namespace cortado
