// accuracy_math.hpp — the arithmetic of Accuracy, once for both devices (kernels/for_each.hpp), over the
// scores read as (outer, C, inner): position p (of outer · inner) has its label at label[p] and its
// scores at base(p) + c · inner (softmax_math.hpp's BaseOf).
//   A labelled position is a hit when fewer than top_k other classes score >= the true class's score
//   (ties count against the prediction; Caffe's rule): Hit.
//   accuracy = hits / counted positions (0 when none): a Total over positions (Count, StoreAccuracy), the
//   counts summed exactly (integers in double); a bad label is flagged (loss::KeepFirst) and skipped.
//   per class c (the optional second top): hits / samples of the positions labelled c, in float, the
//   positions in increasing order (PerClass, one index per class; 0 for a class without samples).
// Ignored positions (has_ignore and label == ignore_label) count nowhere. The float operations are the
// CPU loop's of before, in its order. accuracy.cpp runs them; cuda/accuracy_math.cu instantiates them.
#pragma once

#include <cstdint>

#include "cortado/kernels/for_each.hpp"
#include "loss_math.hpp"
#include "softmax_math.hpp"  // BaseOf

namespace cortado::accuracy {

// The scores and labels of the positions, and the rule.
struct Ranking {
  int64_t channels, inner;
  int top_k;
  bool has_ignore;
  int ignore_label;
  const float* x;
  const float* label;
  CORTADO_HOST_DEVICE bool Ignored(int l) const { return has_ignore && l == ignore_label; }
  // Whether position p, labelled l (in [0, channels)), has l among its top_k classes.
  CORTADO_HOST_DEVICE bool Hit(int64_t p, int l) const {
    const float* xp = x + softmax::BaseOf(p, channels, inner);
    const float truth = xp[l * inner];
    int at_least = -1;  // classes scoring >= the true one, the true class itself excluded
    for (int64_t c = 0; c < channels && at_least < top_k; ++c) at_least += xp[c * inner] >= truth;
    return at_least < top_k;
  }
};

// Total term: sums[0] += hit, sums[1] += 1 for each labelled position; a bad label is flagged in *flag.
struct Count {
  static constexpr int kSums = 2;
  Ranking r;
  unsigned* flag;
  CORTADO_HOST_DEVICE void operator()(int64_t p, double* sums) const {
    const int l = LabelOf(r.label[p]);
    if (r.Ignored(l)) return;
    if (!loss::InRangeOrFlagged(l, r.channels, flag, p)) return;
    sums[0] += r.Hit(p, l) ? 1 : 0;
    sums[1] += 1;
  }
};

// Total's finish: *accuracy = hits / counted, 0 when nothing was counted.
struct StoreAccuracy {
  float* accuracy;
  CORTADO_HOST_DEVICE void operator()(const double* totals) const {
    *accuracy = totals[1] == 0 ? 0.0f : static_cast<float>(totals[0]) / static_cast<float>(totals[1]);
  }
};

// out[c] = hits / samples over the `positions` positions labelled c (0 without samples); the counts in
// float, added in increasing position.
struct PerClass {
  Ranking r;
  int64_t positions;
  float* out;
  CORTADO_HOST_DEVICE void operator()(int64_t c) const {
    float total = 0.0f, correct = 0.0f;
    for (int64_t p = 0; p < positions; ++p) {
      const int l = LabelOf(r.label[p]);
      if (l != c || r.Ignored(l)) continue;
      total += 1;
      correct += r.Hit(p, l);
    }
    out[c] = total == 0 ? 0.0f : correct / total;
  }
};

}  // namespace cortado::accuracy
