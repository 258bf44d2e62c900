// index_gradient.hpp — gradient checks and backward passes for layers that, as in Caffe, refuse a request
// for the gradient of an index bottom (Embed's indices, Filter's selector, BatchReindex's indices):
// test_util's CheckGradient and LayerFixture::Backward ask for every bottom, so these pass
// propagate_down false for the index bottoms. Same objective as CheckGradient: Σ r·top, r fixed.
#pragma once

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "test_util.hpp"

namespace cortado::test {

// propagate_down: true except at `index_bottoms`.
inline std::vector<bool> AllBut(size_t bottoms, const std::vector<int>& index_bottoms) {
  std::vector<bool> down(bottoms, true);
  for (int i : index_bottoms) down[static_cast<size_t>(i)] = false;
  return down;
}

// Zeroes the learnable blobs' diffs, then runs Backward without the index bottoms.
inline void BackwardWithout(LayerFixture& f, const std::vector<int>& index_bottoms) {
  for (auto& p : f.layer().blobs()) p->WriteDiff(std::vector<float>(static_cast<size_t>(p->count()), 0.0f));
  f.layer().Backward(f.top(), AllBut(f.bottom().size(), index_bottoms), f.bottom());
}

// Central differences against Backward for every element of the other bottoms and of the learnable
// blobs; |analytic − numeric| ≤ threshold · max(1, |analytic|, |numeric|).
inline void CheckGradientWithoutIndices(LayerFixture& f, const std::vector<int>& index_bottoms, float step = 1e-2f,
                                        float threshold = 1e-2f) {
  f.Forward();
  std::vector<std::vector<float>> r(f.top().size());
  std::mt19937 rng(4242);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (size_t t = 0; t < f.top().size(); ++t) {
    r[t].resize(static_cast<size_t>(f.top()[t]->count()));
    for (float& v : r[t]) v = dist(rng);
    std::copy(r[t].begin(), r[t].end(), f.top()[t]->diff());
  }
  BackwardWithout(f, index_bottoms);
  auto objective = [&] {
    f.Forward();
    double total = 0;
    for (size_t t = 0; t < f.top().size(); ++t)
      for (int64_t i = 0; i < f.top()[t]->count(); ++i) total += double(r[t][i]) * f.top()[t]->data()[i];
    return total;
  };
  auto check = [&](Blob& blob, const std::vector<float>& analytic, const char* what, size_t index) {
    for (int64_t i = 0; i < blob.count(); ++i) {
      const float saved = blob.data()[i];
      blob.data()[i] = saved + step;
      const double plus = objective();
      blob.data()[i] = saved - step;
      const double minus = objective();
      blob.data()[i] = saved;
      const double numeric = (plus - minus) / (2.0 * step);
      const double scale = std::max({std::fabs(double(analytic[i])), std::fabs(numeric), 1.0});
      EXPECT_NEAR(analytic[i], numeric, threshold * scale) << what << " " << index << " element " << i;
    }
  };
  std::vector<std::vector<float>> bottom_grads, param_grads;
  for (Blob* b : f.bottom()) bottom_grads.emplace_back(b->diff(), b->diff() + b->count());
  for (auto& p : f.layer().blobs()) param_grads.emplace_back(p->diff(), p->diff() + p->count());
  for (size_t b = 0; b < f.bottom().size(); ++b)
    if (!std::count(index_bottoms.begin(), index_bottoms.end(), static_cast<int>(b)))
      check(*f.bottom()[b], bottom_grads[b], "bottom", b);
  for (size_t p = 0; p < f.layer().blobs().size(); ++p) check(*f.layer().blobs()[p], param_grads[p], "param", p);
}

}  // namespace cortado::test
