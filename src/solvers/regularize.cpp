// regularize.cpp — gradient processing before the update: global L2-norm clipping and L2 / L1 weight
// decay, segment by segment over the flat buffers.
#include <glog/logging.h>

#include <cmath>
#include <string>

#include "cortado/error.hpp"          // CORTADO_REQUIRE
#include "cortado/update_rules.hpp"   // FlatParams, ClipGradients, Regularize

namespace cortado {

namespace {

// Σx², accumulated in 8 double lanes (vectorisable: no reassociation needed, and accurate even when a
// few large gradients sit among many small ones).
double SumSquares(const float* x, int64_t n) {
  constexpr int64_t kLanes = 8;
  double acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int64_t j = 0; j < kLanes; ++j) acc[j] += static_cast<double>(x[i + j]) * x[i + j];
  double total = 0;
  for (double a : acc) total += a;
  for (; i < n; ++i) total += static_cast<double>(x[i]) * x[i];
  return total;
}

}  // namespace

float ClipGradients(FlatParams& params, float clip_gradients) {
  if (clip_gradients < 0) return -1.0f;
  double sumsq = 0;
  for (const ParamSegment& s : params.segments) sumsq += SumSquares(params.diff + s.offset, s.count);
  const float norm = static_cast<float>(std::sqrt(sumsq));
  if (norm > clip_gradients) {
    const float scale = clip_gradients / norm;
    LOG(INFO) << "Gradient clipping: scaling down gradients (L2 norm " << norm << " > "
              << clip_gradients << ") by scale factor " << scale;
    for (const ParamSegment& s : params.segments) {
      float* __restrict g = params.diff + s.offset;
      for (int64_t i = 0; i < s.count; ++i) g[i] *= scale;
    }
  }
  return norm;
}

void Regularize(FlatParams& params, const SolverParameter& param) {
  const std::string& type = param.regularization_type();
  const bool l1 = type == "L1";
  CORTADO_REQUIRE(l1 || type == "L2", "solver: unknown regularization_type \"", type,
                  "\" (known types: L2, L1)");
  for (const ParamSegment& s : params.segments) {
    const float decay = param.weight_decay() * s.decay_mult;
    if (decay == 0) continue;
    const float* __restrict w = params.data + s.offset;
    float* __restrict g = params.diff + s.offset;
    if (l1) {
      for (int64_t i = 0; i < s.count; ++i)
        g[i] += decay * static_cast<float>((0.0f < w[i]) - (w[i] < 0.0f));
    } else {
      for (int64_t i = 0; i < s.count; ++i) g[i] += decay * w[i];
    }
  }
}

}  // namespace cortado
