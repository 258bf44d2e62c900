// regularize.cpp — gradient processing before the update: global L2-norm clipping and L2 / L1 weight
// decay, segment by segment over the flat buffers, on the host or (given a GPU context) on the GPU.
#include <glog/logging.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "cortado/error.hpp"          // CORTADO_REQUIRE
#include "cortado/math_gpu.hpp"       // gpu_sumsq, gpu_scale
#include "cortado/update_rules.hpp"   // FlatParams, ClipGradients, Regularize
#include "update_math.hpp"            // DecayTerm

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

bool IsL1Regularization(const SolverParameter& param) {
  const std::string& type = param.regularization_type();
  const bool l1 = type == "L1";
  CORTADO_REQUIRE(l1 || type == "L2", "solver: unknown regularization_type \"", type,
                  "\" (known types: L2, L1)");
  return l1;
}

namespace {

void LogClipping(float norm, float clip_gradients, float scale) {
  LOG(INFO) << "Gradient clipping: scaling down gradients (L2 norm " << norm << " > " << clip_gradients
            << ") by scale factor " << scale;
}

// The segments as runs of adjacent elements {offset, count}: one run for a Net's flat buffer, where
// the parameters lie end to end.
std::vector<std::pair<int64_t, int64_t>> Runs(const FlatParams& params) {
  std::vector<std::pair<int64_t, int64_t>> runs;
  for (const ParamSegment& s : params.segments) {
    if (s.count == 0) continue;
    if (!runs.empty() && runs.back().first + runs.back().second == s.offset) {
      runs.back().second += s.count;
    } else {
      runs.push_back({s.offset, s.count});
    }
  }
  return runs;
}

}  // namespace

float ClipGradients(FlatParams& params, float clip_gradients) {
  if (clip_gradients < 0) return -1.0f;
  double sumsq = 0;
  for (const ParamSegment& s : params.segments) sumsq += SumSquares(params.diff + s.offset, s.count);
  const float norm = static_cast<float>(std::sqrt(sumsq));
  if (norm > clip_gradients) {
    const float scale = clip_gradients / norm;
    LogClipping(norm, clip_gradients, scale);
    for (const ParamSegment& s : params.segments) {
      float* __restrict g = params.diff + s.offset;
      for (int64_t i = 0; i < s.count; ++i) g[i] *= scale;
    }
  }
  return norm;
}

void Regularize(FlatParams& params, const SolverParameter& param) {
  const bool l1 = IsL1Regularization(param);
  for (const ParamSegment& s : params.segments) {
    const float decay = param.weight_decay() * s.decay_mult;
    if (decay == 0) continue;
    const float* __restrict w = params.data + s.offset;
    float* __restrict g = params.diff + s.offset;
    if (l1) {
      for (int64_t i = 0; i < s.count; ++i) g[i] += DecayTerm<true>(decay, w[i]);
    } else {
      for (int64_t i = 0; i < s.count; ++i) g[i] += DecayTerm<false>(decay, w[i]);
    }
  }
}

float ClipGradients(Context& ctx, FlatParams& params, float clip_gradients) {
  if (ctx.device() == Device::kCPU) return ClipGradients(params, clip_gradients);
  if (clip_gradients < 0) return -1.0f;
  const auto runs = Runs(params);
  constexpr int64_t kChunk = int64_t{1} << 30;  // cuBLAS counts in int
  double sumsq = 0;                              // each gpu_sumsq waits for its sum
  for (const auto& [offset, count] : runs)
    for (int64_t done = 0; done < count; done += kChunk)
      sumsq += gpu_sumsq(ctx, std::min(kChunk, count - done), params.diff + offset + done);
  const float norm = static_cast<float>(std::sqrt(sumsq));
  if (norm > clip_gradients) {
    const float scale = clip_gradients / norm;
    LogClipping(norm, clip_gradients, scale);
    for (const auto& [offset, count] : runs) gpu_scale(ctx, count, scale, params.diff + offset);
  }
  return norm;
}

void Regularize(Context& ctx, FlatParams& params, const SolverParameter& param) {
  if (ctx.device() == Device::kCPU) return Regularize(params, param);
  gpu_regularize(ctx, params, param.weight_decay(), IsL1Regularization(param));
}

}  // namespace cortado
