// softmax_math.hpp — the arithmetic of Softmax, SoftmaxWithLoss and InfogainLoss, once for both devices
// (kernels/for_each.hpp). A blob is read as (outer, C, inner): position p (of outer · inner) is the
// channel vector at base(p) = (p / inner) · C · inner + p % inner, stride inner.
//   Softmax (RunPositions: ForEach over positions): m = max_c x_c (the first channel, then MaxOf in
//     increasing c); y_c = expf(x_c − m); s = Σ_c y_c in float in increasing c; y_c ·= 1 / s.
//     Backward: d = Σ_c dy_c · y_c (float, increasing c, each step a MulAdd); dx_c = (dy_c − d) · y_c.
//   SoftmaxWithLoss (Total over positions, loss_math.hpp): loss −= log(max(p_l, FLT_MIN)) per position
//     with label l, count += 1; with inner 1, each position's softmax is computed in the same term. Backward (RunPositions): dx_c = scale · p_c, then dx_l −= scale (two
//     roundings, as the CPU loop always did); 0 at ignored positions; scale = dloss / normalizer
//     (loss::GradScale).
//   InfogainLoss: loss −= Σ_c H[l, c] · log(max(p_c, 1e-20)) per position (in double, increasing c),
//     count += 1; H's row sums r_l = Σ_c H[l, c] (float, increasing c; ForEach over rows); backward
//     (ForEach over positions) dx_c = scale · (p_c · r_l − H[l, c]); 0 at ignored positions.
// Ignored positions (has_ignore and l == ignore_label) count for nothing; a label outside [0, C) is
// flagged (loss::KeepFirst) and skipped, never read through. Each functor does the float operations of
// the CPU loops it replaced in their order, so CPU results are bit for bit those of before.
// softmax.cpp, softmax_loss.cpp and infogain_loss.cpp run them; cuda/softmax_math.cu instantiates them.
#pragma once

#include <math.h>

#include <cfloat>
#include <cstdint>
#include <type_traits>

#include "cortado/context.hpp"
#include "cortado/kernels/for_each.hpp"
#include "loss_math.hpp"

namespace cortado::softmax {

// The smallest probability whose log InfogainLoss takes (Caffe's kLOG_THRESHOLD).
constexpr float kInfogainLogThreshold = 1e-20f;

// a · b + c as the CPU loops of before computed `s += a * b`: rounded once (an FMA) where the compiler
// contracts it (targets with FMA: x86-64-v3, the default build, and ARM; the GPU), else twice. Written
// out because a loop the compiler vectorizes as an in-order reduction would not be contracted.
CORTADO_HOST_DEVICE inline float MulAdd(float a, float b, float c) {
#if defined(__CUDA_ARCH__) || defined(__FMA__) || defined(__ARM_FEATURE_FMA)
  return fmaf(a, b, c);
#else
  return a * b + c;
#endif
}

// The index of position p's channel 0 in an (outer, channels, inner) blob.
CORTADO_HOST_DEVICE inline int64_t BaseOf(int64_t p, int64_t channels, int64_t inner) {
  return (p / inner) * channels * inner + p % inner;
}

// Positions side by side. An index of ForEach over positions walks up to W neighbouring positions of
// one outer row together, each with its own accumulators: W = 1 on the GPU (a thread per position,
// neighbouring threads reading neighbouring memory) and where inner is 1 (the channels are then
// contiguous); kCpuLanes on the CPU otherwise, so that the channel loops run over contiguous lanes as
// the CPU loops of before did (RunPositions; measured about as fast as they were on one thread, for
// inner from 2 to 10⁵). Every position's arithmetic is the same for any W.
constexpr int kCpuLanes = 256;

struct Lanes {
  int64_t base;   // the index of the first position's channel 0
  int64_t first;  // the first position (its label's index)
  int64_t width;  // positions walked: W, fewer at the end of a row
};

template <int W>
CORTADO_HOST_DEVICE inline Lanes LanesOf(int64_t q, int64_t channels, int64_t inner) {
  if constexpr (W == 1) {
    return {BaseOf(q, channels, inner), q, 1};
  } else {
    const int64_t blocks = (inner + W - 1) / W, i = q / blocks, j = q % blocks * W;
    return {i * channels * inner + j, i * inner + j, inner - j < W ? inner - j : W};
  }
}

// The number of ForEach indices that cover outer × inner positions W at a time.
template <int W>
int64_t IndicesFor(int64_t outer, int64_t inner) {
  return outer * ((inner + W - 1) / W);
}

// ForEach over the positions of (outer, channels, inner), on the context's device, of the functor
// make(std::integral_constant<int, W>{}) returns (one of this file's templates, instantiated for the
// GPU with W = 1 only).
template <typename Make>
void RunPositions(Context& ctx, int64_t outer, int64_t channels, int64_t inner, const Make& make) {
  if (ctx.device() == Device::kGPU || inner == 1) {
    ForEach(ctx, outer * inner, make(std::integral_constant<int, 1>{}), channels);
  } else {
    ForEachCpu(IndicesFor<kCpuLanes>(outer, inner), make(std::integral_constant<int, kCpuLanes>{}),
               channels * (inner < kCpuLanes ? inner : kCpuLanes));
  }
}

// y = softmax(x) over the channels of each position (y may be x).
template <int W>
struct Forward {
  int64_t channels, inner;
  const float* x;
  float* y;
  CORTADO_HOST_DEVICE void operator()(int64_t q) const {
    const Lanes s = LanesOf<W>(q, channels, inner);
    float m[W], sum[W];
    for (int64_t w = 0; w < s.width; ++w) m[w] = x[s.base + w];
    for (int64_t c = 1; c < channels; ++c) {
      const float* xc = x + s.base + c * inner;
      for (int64_t w = 0; w < s.width; ++w) m[w] = MaxOf(m[w], xc[w]);
    }
    for (int64_t w = 0; w < s.width; ++w) sum[w] = 0.0f;
    for (int64_t c = 0; c < channels; ++c) {
      const float* xc = x + s.base + c * inner;
      float* yc = y + s.base + c * inner;
      for (int64_t w = 0; w < s.width; ++w) {
        const float e = expf(xc[w] - m[w]);
        yc[w] = e;
        sum[w] += e;
      }
    }
    for (int64_t w = 0; w < s.width; ++w) sum[w] = 1.0f / sum[w];  // now the scale
    for (int64_t c = 0; c < channels; ++c) {
      float* yc = y + s.base + c * inner;
      for (int64_t w = 0; w < s.width; ++w) yc[w] *= sum[w];
    }
  }
};

// dx = (dy − Σ dy·y) · y over the channels of each position (dx may be dy).
template <int W>
struct Backward {
  int64_t channels, inner;
  const float* y;
  const float* dy;
  float* dx;
  CORTADO_HOST_DEVICE void operator()(int64_t q) const {
    const Lanes s = LanesOf<W>(q, channels, inner);
    float dot[W];
    for (int64_t w = 0; w < s.width; ++w) dot[w] = 0.0f;
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t k = s.base + c * inner;
      for (int64_t w = 0; w < s.width; ++w) dot[w] = MulAdd(dy[k + w], y[k + w], dot[w]);
    }
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t k = s.base + c * inner;
      for (int64_t w = 0; w < s.width; ++w) dx[k + w] = (dy[k + w] - dot[w]) * y[k + w];
    }
  }
};

// What SoftmaxWithLoss and InfogainLoss know of a position's label.
struct Labels {
  int64_t channels, inner;
  const float* label;
  bool has_ignore;
  int ignore_label;
  CORTADO_HOST_DEVICE bool Ignored(int l) const { return has_ignore && l == ignore_label; }
  CORTADO_HOST_DEVICE bool Valid(int l) const { return l >= 0 && l < channels; }
};

// SoftmaxWithLoss's Total term: position p's −log(max(p_l, FLT_MIN)) and its count; a bad label is
// flagged in *flag.
struct LossTerm {
  static constexpr int kSums = 2;
  Labels labels;
  const float* prob;
  unsigned* flag;
  CORTADO_HOST_DEVICE void operator()(int64_t p, double* sums) const {
    const int l = LabelOf(labels.label[p]);
    if (labels.Ignored(l)) return;
    if (!loss::InRangeOrFlagged(l, labels.channels, flag, p)) return;
    sums[0] -= logf(MaxOf(prob[BaseOf(p, labels.channels, labels.inner) + l * labels.inner], FLT_MIN));
    sums[1] += 1;
  }
};

// SoftmaxWithLoss when each position's channels are contiguous (inner 1: a classifier's scores): the
// softmax of position p (Forward<1>), then its LossTerm, in one pass (Total) instead of two.
struct SoftmaxAndLossTerm {
  static constexpr int kSums = 2;
  Forward<1> softmax;
  LossTerm loss;
  CORTADO_HOST_DEVICE void operator()(int64_t p, double* sums) const {
    softmax(p);
    loss(p, sums);
  }
};

// SoftmaxWithLoss's gradient over the channels of each position: dx = scale · prob, then scale off the
// label's channel (0 at an ignored position).
template <int W>
struct LossGrad {
  Labels labels;
  const float* prob;
  const float* dloss;
  const float* work;
  float* dx;
  CORTADO_HOST_DEVICE void operator()(int64_t q) const {
    const int64_t channels = labels.channels, inner = labels.inner;
    const Lanes s = LanesOf<W>(q, channels, inner);
    const float scale = loss::GradScale(dloss, work);
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t k = s.base + c * inner;
      for (int64_t w = 0; w < s.width; ++w) dx[k + w] = scale * prob[k + w];
    }
    for (int64_t w = 0; w < s.width; ++w) {
      const int l = LabelOf(labels.label[s.first + w]);
      if (labels.Ignored(l)) {
        for (int64_t c = 0; c < channels; ++c) dx[s.base + c * inner + w] = 0.0f;
      } else if (labels.Valid(l)) {
        dx[s.base + l * inner + w] -= scale;  // the stored product, then the subtraction
      }
    }
  }
};

// InfogainLoss's Total term: position p's −Σ_c H[l, c] · log(max(p_c, 1e-20)) and its count.
struct InfogainTerm {
  static constexpr int kSums = 2;
  Labels labels;
  const float* prob;
  const float* h;
  unsigned* flag;
  CORTADO_HOST_DEVICE void operator()(int64_t p, double* sums) const {
    const int l = LabelOf(labels.label[p]);
    if (labels.Ignored(l)) return;
    if (!loss::InRangeOrFlagged(l, labels.channels, flag, p)) return;
    const int64_t channels = labels.channels, inner = labels.inner, base = BaseOf(p, channels, inner);
    for (int64_t c = 0; c < channels; ++c)
      sums[0] -= static_cast<double>(h[l * channels + c]) * logf(MaxOf(prob[base + c * inner], kInfogainLogThreshold));
    sums[1] += 1;
  }
};

// sums[r] = Σ_c H[r, c] for row r of the channels × channels H, in float in increasing c (Caffe's
// sum_rows_of_H).
struct RowSums {
  int64_t channels;
  const float* h;
  float* sums;
  CORTADO_HOST_DEVICE void operator()(int64_t r) const {
    float sum = 0;
    for (int64_t c = 0; c < channels; ++c) sum += h[r * channels + c];
    sums[r] = sum;
  }
};

// InfogainLoss's gradient at position p: dx_c = scale · (p_c · row_sums[l] − H[l, c]); 0 when ignored.
struct InfogainGrad {
  Labels labels;
  const float* prob;
  const float* h;
  const float* row_sums;
  const float* dloss;
  const float* work;
  float* dx;
  CORTADO_HOST_DEVICE void operator()(int64_t p) const {
    const int64_t channels = labels.channels, inner = labels.inner, base = BaseOf(p, channels, inner);
    const int l = LabelOf(labels.label[p]);
    if (labels.Ignored(l) || !labels.Valid(l)) {  // the forward pass refused bad labels
      for (int64_t c = 0; c < channels; ++c) dx[base + c * inner] = 0.0f;
      return;
    }
    const float scale = loss::GradScale(dloss, work);
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t k = base + c * inner;
      dx[k] = scale * (prob[k] * row_sums[l] - h[l * channels + c]);
    }
  }
};

}  // namespace cortado::softmax
