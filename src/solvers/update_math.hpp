// update_math.hpp — the six update rules' arithmetic on one element, once for both devices: the CPU
// loops (update_rules.cpp) and the GPU's fused update kernel (cuda/update_rules_gpu.cu) both call
// RuleStep. The formulas are update_rules.hpp's, in Caffe's order of float operations. What stays
// device-specific is the walk over the segments: the CPU loops segment by segment; the GPU walks a
// segment table per launch and folds the gradient's processing (iter_size scaling, clipping, weight
// decay) into the same pass.
#pragma once

#include <math.h>

#include "cortado/kernels/for_each.hpp"  // CORTADO_HOST_DEVICE
#include "cortado/update_rules.hpp"      // UpdateConstants

namespace cortado {

CORTADO_HOST_DEVICE constexpr bool HasTwoHistories(UpdateConstants::Kind kind) {
  return kind == UpdateConstants::kAdaDelta || kind == UpdateConstants::kAdam;
}

// Weight decay's term for one element: λ·w (L2) or λ·sign(w) (L1, sign(0) = 0), added to the gradient.
template <bool l1>
CORTADO_HOST_DEVICE inline float DecayTerm(float decay, float w) {
  return l1 ? decay * static_cast<float>((0.0f < w) - (w < 0.0f)) : decay * w;
}

// One element's update by rule `kind`, from its processed gradient g and local rate α = rate · lr_mult:
// updates the history h0 (and h1 for AdaDelta and Adam) and returns u, which the caller stores in the
// gradient and subtracts from the weight. `correction` is Adam's bias correction (unused by the others).
template <UpdateConstants::Kind kind>
CORTADO_HOST_DEVICE inline float RuleStep(const UpdateConstants& c, float alpha, float correction, float g, float& h0,
                                          float& h1) {
  if constexpr (kind == UpdateConstants::kSGD) {  // h = μ·h + α·g; u = h
    h0 = alpha * g + c.mu * h0;
    return h0;
  } else if constexpr (kind == UpdateConstants::kNesterov) {  // h' = μ·h + α·g; u = (1+μ)·h' − μ·h
    const float old = h0;
    const float v = alpha * g + c.mu * old;
    h0 = v;
    return (1.0f + c.mu) * v + -c.mu * old;
  } else if constexpr (kind == UpdateConstants::kAdaGrad) {  // h += g²; u = α·g / (√h + δ)
    h0 = h0 + g * g;
    return alpha * (g / (sqrtf(h0) + c.delta));
  } else if constexpr (kind == UpdateConstants::kRMSProp) {  // h = ρ·h + (1−ρ)·g²; u = α·g / (√h + δ)
    h0 = (1.0f - c.mu) * (g * g) + c.mu * h0;
    return alpha * (g / (sqrtf(h0) + c.delta));
  } else if constexpr (kind == UpdateConstants::kAdaDelta) {  // h, then d = g·√((s+δ)/(h+δ)), s; u = α·d
    h0 = (1.0f - c.mu) * (g * g) + c.mu * h0;
    const float d = g * sqrtf((c.delta + h1) / (c.delta + h0));
    h1 = (1.0f - c.mu) * (d * d) + c.mu * h1;
    return alpha * d;
  } else {  // Adam: m = β₁·m + (1−β₁)·g; v = β₂·v + (1−β₂)·g²; u = α·correction · m / (√v + ε)
    h0 = (1.0f - c.mu) * g + c.mu * h0;
    h1 = (1.0f - c.mu2) * (g * g) + c.mu2 * h1;
    return (alpha * correction) * (h0 / (sqrtf(h1) + c.delta));
  }
}

}  // namespace cortado
