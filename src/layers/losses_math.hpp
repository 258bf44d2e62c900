// losses_math.hpp — the arithmetic of SigmoidCrossEntropyLoss, ContrastiveLoss, HingeLoss,
// MultinomialLogisticLoss and EuclideanLoss, once for both devices (kernels/for_each.hpp,
// loss_math.hpp). A forward Term adds one position's (sample's) loss to sums[0] in double, in the
// order the CPU loops always have; loss::SumLoss (or Total, for EuclideanLoss) sums it and stores the
// loss top and the normalizer. A backward functor reads dloss (the loss top's diff) and, where the
// normalizer is known only after the forward pass, the work blob's normalizer through pointers, so
// nothing waits for the GPU. The layers' .cpp run them; cuda/losses_math.cu instantiates them.
//
//   SigmoidCrossEntropy  loss_i = max(x, 0) − x·t + log(1 + e^−|x|), counted unless ignored;
//                        dx = (σ(x) − t) · dloss / n, 0 where ignored.
//   Contrastive          d_i² = ‖a_i − b_i‖² (summed in float over the channels in order, kept);
//                        loss_i = d² (similar), max(margin − d², 0) (dissimilar, legacy),
//                        max(margin − d, 0)² (dissimilar); da = scale_i · (a − b), db = −da.
//   Hinge                m_ij = max(0, 1 + v_ij), v = −x at the label, x elsewhere; loss_i = Σ_j m
//                        (L1) or Σ_j m² (L2); dx = ±(L1: [m > 0]; L2: 2m) · dloss / n.
//   MultinomialLogistic  loss_i = −log(max(p_i,label, 1e-20)); dp = −dloss / (n · max(p, 1e-20)) at the
//                        label, 0 elsewhere.
//   Euclidean            Σ (a − b)² / (2N); da = (a − b) · dloss / N, db = −da.
// A bad label (outside [0, dim)) is skipped by the forward terms and flagged (loss::KeepFirst); the
// layer then fails with the first one. The math functions are C's float ones, as on the CPU before.
#pragma once

#include <math.h>

#include <cstdint>

#include "cortado/kernels/for_each.hpp"
#include "loss_math.hpp"

namespace cortado::loss {

// ---- SigmoidCrossEntropyLoss ----------------------------------------------------------------------
// Whether target t is ignored: has_ignore and static_cast<int>(t) == ignore_label.
CORTADO_HOST_DEVICE inline bool IgnoredTarget(float t, bool has_ignore, int ignore_label) {
  return has_ignore && LabelOf(t) == ignore_label;
}

// Over the n positions; sums[1] counts those not ignored.
struct SigmoidCrossEntropyTerm {
  static constexpr int kSums = 2;
  const float* x;
  const float* t;
  bool has_ignore;
  int ignore_label;
  CORTADO_HOST_DEVICE void operator()(int64_t i, double* sums) const {
    if (IgnoredTarget(t[i], has_ignore, ignore_label)) return;
    sums[0] += MaxOf(x[i], 0.0f) - x[i] * t[i] + log1pf(expf(-fabsf(x[i])));
    sums[1] += 1;
  }
};

// Map: dx = f(x, t).
struct SigmoidCrossEntropyBackward {
  bool has_ignore;
  int ignore_label;
  const float* dloss;
  const float* work;
  CORTADO_HOST_DEVICE float operator()(float x, float t) const {
    return IgnoredTarget(t, has_ignore, ignore_label) ? 0.0f : GradScale(dloss, work) * (1.0f / (1.0f + expf(-x)) - t);
  }
};

// ---- ContrastiveLoss ------------------------------------------------------------------------------
// static_cast<int>(y) != 0, with NaN and values outside int's range (INT_MIN on x86) similar.
CORTADO_HOST_DEVICE inline bool Similar(float y) { return !(y > -1.0f && y < 1.0f); }

// Over the num samples (a, b: num × channels); writes dist_sq[i] for the backward pass.
struct ContrastiveTerm {
  static constexpr int kSums = 1;
  const float* a;
  const float* b;
  const float* y;
  float* dist_sq;
  int64_t channels;
  float margin;
  bool legacy;
  CORTADO_HOST_DEVICE void operator()(int64_t i, double* sums) const {
    float d2 = 0;
    for (int64_t c = 0; c < channels; ++c) {
      const float d = a[i * channels + c] - b[i * channels + c];
      d2 += d * d;
    }
    dist_sq[i] = d2;
    if (Similar(y[i])) {
      sums[0] += d2;
    } else if (legacy) {
      sums[0] += MaxOf(margin - d2, 0.0f);
    } else {
      const float m = MaxOf(margin - sqrtf(d2), 0.0f);
      sums[0] += m * m;
    }
  }
};

// MapChannels over ChannelLayout{1, num, channels} (a sample's channels are one plane): dx = f(i, a, b),
// the gradient of a (sign +1) or b (sign −1), alpha = sign · dloss / num.
struct ContrastiveBackward {
  const float* y;
  const float* dist_sq;
  const float* dloss;
  float num;
  float sign;
  float margin;
  bool legacy;
  CORTADO_HOST_DEVICE float operator()(int64_t i, float a, float b) const {
    const float alpha = sign * dloss[0] / num;
    float scale;
    if (Similar(y[i])) {
      scale = alpha;
    } else if (legacy) {
      scale = margin - dist_sq[i] > 0.0f ? -alpha : 0.0f;
    } else {
      const float dist = sqrtf(dist_sq[i]);
      const float mdist = margin - dist;
      scale = mdist > 0.0f ? -alpha * mdist / (dist + 1e-4f) : 0.0f;
    }
    return scale * (a - b);
  }
};

// ---- HingeLoss ------------------------------------------------------------------------------------
// Over the num samples (x: num × dim), the classes of a sample in order.
struct HingeTerm {
  static constexpr int kSums = 1;
  const float* x;
  const float* label;
  unsigned* flag;
  int64_t dim;
  bool l2;
  CORTADO_HOST_DEVICE void operator()(int64_t i, double* sums) const {
    const int l = LabelOf(label[i]);
    if (!InRangeOrFlagged(l, dim, flag, i)) return;
    for (int64_t j = 0; j < dim; ++j) {
      const float m = MaxOf(0.0f, 1.0f + (j == l ? -x[i * dim + j] : x[i * dim + j]));
      sums[0] += l2 ? m * m : m;
    }
  }
};

// ForEach over the num · dim scores.
struct HingeBackward {
  const float* x;
  const float* label;
  const float* dloss;
  const float* work;
  float* dx;
  int64_t dim;
  bool l2;
  CORTADO_HOST_DEVICE void operator()(int64_t k) const {
    const float scale = GradScale(dloss, work);
    const int64_t i = k / dim, j = k - i * dim;
    const int l = LabelOf(label[i]);
    const float m = MaxOf(0.0f, 1.0f + (j == l ? -x[k] : x[k]));
    const float g = l2 ? 2.0f * m : (m > 0.0f ? 1.0f : 0.0f);
    dx[k] = (j == l ? -scale : scale) * g;
  }
};

// ---- MultinomialLogisticLoss ----------------------------------------------------------------------
// The smallest probability whose log is taken (Caffe's kLOG_THRESHOLD).
constexpr float kMultinomialLogThreshold = 1e-20f;

// Over the num samples (prob: num × dim).
struct MultinomialLogisticTerm {
  static constexpr int kSums = 1;
  const float* prob;
  const float* label;
  unsigned* flag;
  int64_t dim;
  CORTADO_HOST_DEVICE void operator()(int64_t i, double* sums) const {
    const int l = LabelOf(label[i]);
    if (!InRangeOrFlagged(l, dim, flag, i)) return;
    sums[0] -= logf(MaxOf(prob[i * dim + l], kMultinomialLogThreshold));
  }
};

// ForEach over the num · dim probabilities.
struct MultinomialLogisticBackward {
  const float* prob;
  const float* label;
  const float* dloss;
  const float* work;
  float* dprob;
  int64_t dim;
  CORTADO_HOST_DEVICE void operator()(int64_t k) const {
    const int64_t i = k / dim, j = k - i * dim;
    dprob[k] = j == LabelOf(label[i]) ? -GradScale(dloss, work) / MaxOf(prob[k], kMultinomialLogThreshold) : 0.0f;
  }
};

// ---- EuclideanLoss --------------------------------------------------------------------------------
struct EuclideanTerm {
  static constexpr int kSums = 1;
  const float* a;
  const float* b;
  CORTADO_HOST_DEVICE void operator()(int64_t i, double* sums) const {
    const float d = a[i] - b[i];
    sums[0] += d * d;
  }
};

// *loss = Σ / divisor (2N).
struct EuclideanFinish {
  double divisor;
  float* loss;
  CORTADO_HOST_DEVICE void operator()(const double* totals) const { *loss = static_cast<float>(totals[0] / divisor); }
};

// Map: d = f(a, b), the gradient of a (negate false) or b (negate true).
struct EuclideanBackward {
  const float* dloss;
  float num;
  bool negate;
  CORTADO_HOST_DEVICE float operator()(float a, float b) const {
    const float alpha = dloss[0] / num;
    return (negate ? -alpha : alpha) * (a - b);
  }
};

}  // namespace cortado::loss
