// pooling_test.cpp — Pooling: output shapes (CEIL / FLOOR, the padding drop rule, global), MAX and
// AVE against hand-worked values and a direct loop over the padded window, the mask top, gradients;
// STOCHASTIC: TEST values by hand and their gradient, TRAIN samples (always in the window, never a
// zero, frequencies proportional to the values, reproducible by seed) and the routing of their
// gradient; MAX and AVE on 16-bit storage (the float pooling of the same values, rounded once, by
// Cortado's loops whatever the engine asked) and what the net's storage plan is told; and the user
// errors.
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cortado/cpu_engine.hpp"  // OneDnnEnabled
#include "cortado/error.hpp"
#include "cpu_engines.hpp"
#include "typed_pooling.hpp"
#include "layers/channels_last.hpp"  // PoolingComputesOn, PoolingRunsChannelsLast
#include "test_util.hpp"

namespace cortado::test {
namespace {

std::vector<int> TopShape(const std::string& pool_param, const std::vector<int>& bottom) {
  LayerFixture f("type: 'Pooling' pooling_param { " + pool_param + " }", {bottom});
  return f.top(0).shape();
}

// Distinct values, shuffled, spaced 0.1 apart: argmaxes are unique and survive a ±0.01 nudge.
void FillDistinct(Blob& blob, uint32_t seed) {
  std::vector<float> v(blob.count());
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.1f * (static_cast<float>(i) - v.size() / 2.0f);
  std::shuffle(v.begin(), v.end(), std::mt19937(seed));
  std::copy(v.begin(), v.end(), blob.data());
}

struct PoolCase {
  bool max;
  int kh, kw, ph, pw, sh, sw;
  bool floor_mode;
};

std::string LayerText(const PoolCase& k, const std::string& engine = "DEFAULT") {
  std::ostringstream s;
  s << "type: 'Pooling' pooling_param { pool: " << (k.max ? "MAX" : "AVE") << " kernel_h: " << k.kh
    << " kernel_w: " << k.kw << " pad_h: " << k.ph << " pad_w: " << k.pw << " stride_h: " << k.sh
    << " stride_w: " << k.sw << (k.floor_mode ? " round_mode: FLOOR" : "") << " engine: " << engine << " }";
  return s.str();
}

// Whether oneDNN runs this case (pooling.cpp): MAX without a mask top; AVE when no window reaches
// past the padded image, where Caffe's divisor is the kernel's size.
bool OneDnnRuns(const PoolCase& k, int h, int w, int oh, int ow) {
  return k.max || ((oh - 1) * k.sh + k.kh <= h + 2 * k.ph && (ow - 1) * k.sw + k.kw <= w + 2 * k.pw);
}

// Direct pooling of one plane, walking the window in padded coordinates. AVE's divisor counts the
// window positions inside [−pad, size + pad), per Caffe.
float DirectPool(const PoolCase& k, const float* plane, int h, int w, int oh, int ow) {
  float best = -1e30f, sum = 0;
  int inside_padded = 0;
  for (int i = 0; i < k.kh; ++i)
    for (int j = 0; j < k.kw; ++j) {
      const int y = oh * k.sh - k.ph + i, x = ow * k.sw - k.pw + j;
      if (y < h + k.ph && x < w + k.pw) ++inside_padded;
      if (y < 0 || y >= h || x < 0 || x >= w) continue;
      best = std::max(best, plane[y * w + x]);
      sum += plane[y * w + x];
    }
  return k.max ? best : sum / inside_padded;
}

}  // namespace

TEST(Pooling, OutputShapes) {
  // CEIL (the default) keeps a partial last window; FLOOR drops it.
  EXPECT_EQ(TopShape("kernel_size: 3 stride: 2", {1, 1, 6, 6}), (std::vector<int>{1, 1, 3, 3}));
  EXPECT_EQ(TopShape("kernel_size: 3 stride: 2 round_mode: FLOOR", {1, 1, 6, 6}), (std::vector<int>{1, 1, 2, 2}));
  EXPECT_EQ(TopShape("kernel_size: 2 stride: 2", {64, 20, 24, 24}), (std::vector<int>{64, 20, 12, 12}));
  EXPECT_EQ(TopShape("kernel_h: 3 kernel_w: 2 stride_h: 2 stride_w: 1", {1, 2, 7, 5}), (std::vector<int>{1, 2, 3, 4}));
  // Padding: ceil((4 + 4 − 3) / 2) + 1 = 4, but window 3 would start at 6 = 4 + pad: dropped.
  EXPECT_EQ(TopShape("kernel_size: 3 stride: 2 pad: 2", {1, 1, 4, 4}), (std::vector<int>{1, 1, 3, 3}));
  // ceil((5 + 2 − 2) / 3) + 1 = 3, window 2 would start at 6 = 5 + pad: dropped.
  EXPECT_EQ(TopShape("kernel_size: 2 stride: 3 pad: 1", {1, 1, 5, 5}), (std::vector<int>{1, 1, 2, 2}));
  // ceil((4 + 2 − 3) / 2) + 1 = 3, window 2 starts at 3 < 4 + pad: kept.
  EXPECT_EQ(TopShape("kernel_size: 3 stride: 2 pad: 1", {1, 1, 4, 4}), (std::vector<int>{1, 1, 3, 3}));
  EXPECT_EQ(TopShape("global_pooling: true", {2, 3, 4, 5}), (std::vector<int>{2, 3, 1, 1}));
}

TEST(Pooling, MaxHandWorkedCaseWithMask) {
  LayerFixture f("type: 'Pooling' pooling_param { pool: MAX kernel_size: 2 stride: 2 }", {{1, 1, 4, 4}}, 2);
  const float in[] = {1, 5, 2, 0,
                      3, 4, 8, 7,
                      9, 0, 1, 1,
                      2, 6, 3, 1};
  std::copy(in, in + 16, f.bottom(0).data());
  f.Forward();
  const float out[] = {5, 8, 9, 3}, mask[] = {1, 6, 8, 14};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(f.top(0).data()[i], out[i]);
    EXPECT_EQ(f.top(1).data()[i], mask[i]);
  }
  for (int i = 0; i < 4; ++i) f.top(0).diff()[i] = i + 1.0f;
  f.Backward();
  for (int i = 0; i < 16; ++i) {
    const float* hit = std::find(mask, mask + 4, static_cast<float>(i));
    EXPECT_EQ(f.bottom(0).diff()[i], hit == mask + 4 ? 0.0f : (hit - mask) + 1.0f) << i;
  }
}

TEST(Pooling, AveHandWorkedPaddedCase) {
  // 3×3 = 1..9, kernel 2, stride 2, pad 1 → 2×2 (the third window would start at 4 = 3 + pad).
  // Every window lies inside the padded image, so each divides by 4 however few pixels it covers.
  LayerFixture f("type: 'Pooling' pooling_param { pool: AVE kernel_size: 2 stride: 2 pad: 1 }", {{1, 1, 3, 3}});
  ASSERT_EQ(f.top(0).shape(), (std::vector<int>{1, 1, 2, 2}));
  for (int i = 0; i < 9; ++i) f.bottom(0).data()[i] = i + 1.0f;
  f.Forward();
  const float out[] = {1 / 4.0f, (2 + 3) / 4.0f, (4 + 7) / 4.0f, (5 + 6 + 8 + 9) / 4.0f};
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(f.top(0).data()[i], out[i]);
}

TEST(Pooling, AveDivisorIsClippedToThePaddedInput) {
  // 4×4 ones, kernel 3, stride 2, pad 1: windows along an axis are [−1,2), [1,4), [3,6). The last
  // is clipped to the padded extent 5, so its divisor along that axis is 2 (not 3, not 1).
  LayerFixture f("type: 'Pooling' pooling_param { pool: AVE kernel_size: 3 stride: 2 pad: 1 }", {{1, 1, 4, 4}});
  ASSERT_EQ(f.top(0).shape(), (std::vector<int>{1, 1, 3, 3}));
  std::fill(f.bottom(0).data(), f.bottom(0).data() + 16, 1.0f);
  f.Forward();
  const float ratio[] = {2 / 3.0f, 1.0f, 1 / 2.0f};  // pixels covered / divisor, per axis
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) EXPECT_FLOAT_EQ(f.top(0).data()[i * 3 + j], ratio[i] * ratio[j]) << i << "," << j;
}

TEST(Pooling, MatchesDirectPooling) {
  const PoolCase cases[] = {
      // max  kh kw ph pw sh sw floor
      {true, 2, 2, 0, 0, 2, 2, false},
      {true, 3, 3, 0, 0, 2, 2, false},
      {true, 3, 3, 1, 1, 2, 2, false},
      {true, 3, 2, 1, 0, 2, 1, true},
      {true, 2, 3, 1, 2, 3, 2, false},
      {true, 2, 2, 1, 1, 2, 2, false},
      {true, 2, 2, 0, 0, 1, 1, true},
      {true, 3, 3, 2, 1, 1, 3, false},
      {false, 3, 3, 0, 0, 2, 2, false},
      {false, 3, 3, 1, 1, 2, 2, false},
      {false, 2, 3, 1, 2, 3, 2, false},
      {false, 3, 2, 2, 1, 1, 2, true},
  };
  const int n = 2, c = 3, h = 7, w = 8;
  int onednn_cases = 0;
  for (const std::string& engine : PrototxtCpuEngines()) {
   for (const PoolCase& k : cases) {
    SCOPED_TRACE(LayerText(k, engine));
    LayerFixture f(LayerText(k, engine), {{n, c, h, w}});
    FillDistinct(f.bottom(0), 5);
    f.Forward();
    const int oh = f.top(0).shape(2), ow = f.top(0).shape(3);
    const bool onednn = engine == "ONEDNN" && OneDnnRuns(k, h, w, oh, ow);
    EXPECT_STREQ(f.layer().chosen_engine(), onednn ? "onednn" : "caffe");
    onednn_cases += onednn;
    for (int p = 0; p < n * c; ++p)
      for (int y = 0; y < oh; ++y)
        for (int x = 0; x < ow; ++x)
          ASSERT_NEAR(f.top(0).data()[(p * oh + y) * ow + x],
                      DirectPool(k, f.bottom(0).data() + p * h * w, h, w, y, x), 1e-5)
              << "plane " << p << " output " << y << "," << x;
   }
  }
  if (BuiltWithOneDnn()) EXPECT_GE(onednn_cases, 10);
}

TEST(Pooling, KernelWiderThanTheInput) {
  // Width 2, kernel 3, stride 2: CEIL gives ceil((2 − 3) / 2) + 1 = 1 column of windows, clipped to
  // the image (AVE divides by 3·2, then 2·2); rows: ceil((4 − 3) / 2) + 1 = 2.
  for (bool max : {true, false}) {
    const PoolCase k{max, 3, 3, 0, 0, 2, 2, false};
    LayerFixture f(LayerText(k), {{1, 2, 4, 2}});
    ASSERT_EQ(f.top(0).shape(), (std::vector<int>{1, 2, 2, 1}));
    // Increasing values: a window that overran its row would pick up the next row's larger start.
    for (int i = 0; i < 16; ++i) f.bottom(0).data()[i] = static_cast<float>(i);
    f.Forward();
    for (int p = 0; p < 2; ++p)
      for (int y = 0; y < 2; ++y) {
        EXPECT_NEAR(f.top(0).data()[p * 2 + y], DirectPool(k, f.bottom(0).data() + p * 8, 4, 2, y, 0), 1e-5)
            << (max ? "MAX" : "AVE") << " plane " << p << " row " << y;
      }
  }
}

TEST(Pooling, GlobalPooling) {
  for (const char* pool : {"MAX", "AVE"}) {
    LayerFixture f(std::string("type: 'Pooling' pooling_param { global_pooling: true pool: ") + pool + " }",
                   {{2, 3, 4, 5}});
    FillDistinct(f.bottom(0), 3);
    f.Forward();
    for (int p = 0; p < 6; ++p) {
      const float* plane = f.bottom(0).data() + p * 20;
      const float expected = pool[0] == 'M' ? *std::max_element(plane, plane + 20)
                                            : std::accumulate(plane, plane + 20, 0.0f) / 20;
      EXPECT_NEAR(f.top(0).data()[p], expected, 1e-5);
    }
  }
}

TEST(Pooling, MaxGradientCheck) {
  for (const char* text : {"pool: MAX kernel_size: 3 stride: 2", "pool: MAX kernel_size: 3 stride: 2 pad: 1",
                           "pool: MAX kernel_h: 2 kernel_w: 3 stride_h: 1 stride_w: 2 pad_h: 1 pad_w: 0"}) {
    SCOPED_TRACE(text);
    LayerFixture f(std::string("type: 'Pooling' pooling_param { ") + text + " }", {{2, 2, 6, 5}}, 2);
    FillDistinct(f.bottom(0), 9);
    CheckGradient(f);
  }
}

// Without a mask top oneDNN may run MAX (with engine ONEDNN, it does).
TEST(Pooling, MaxWithoutMaskTopGradientCheck) {
  for (const std::string& engine : PrototxtCpuEngines())
    for (const char* text : {"kernel_size: 2 stride: 2", "kernel_size: 3 stride: 2 pad: 1"}) {
      SCOPED_TRACE(engine + " " + text);
      LayerFixture f("type: 'Pooling' pooling_param { pool: MAX " + std::string(text) + " engine: " + engine + " }",
                     {{2, 3, 5, 6}});
      EXPECT_STREQ(f.layer().chosen_engine(), engine == "ONEDNN" ? "onednn" : "caffe");
      FillDistinct(f.bottom(0), 4);
      CheckGradient(f);
    }
}

TEST(Pooling, AveGradientCheck) {
  for (const std::string& engine : PrototxtCpuEngines())
    for (const char* text : {"pool: AVE kernel_size: 3 stride: 2", "pool: AVE kernel_size: 3 stride: 2 pad: 1",
                             "pool: AVE kernel_h: 3 kernel_w: 2 stride: 2 pad_h: 2 pad_w: 1 round_mode: FLOOR",
                             "pool: AVE global_pooling: true"}) {
      SCOPED_TRACE(engine + " " + text);
      LayerFixture f("type: 'Pooling' pooling_param { " + std::string(text) + " engine: " + engine + " }",
                     {{2, 2, 6, 5}});
      f.FillBottoms();
      CheckGradient(f);
    }
}

// The two engines on real-sized planes with ties (ReLU's zeros): the same maxima, the gradient routed
// to the first of equal values in both, and AVE's sums alike up to rounding.
TEST(Pooling, EnginesAgreeOnTiesAndLargePlanes) {
  SKIP_WITHOUT_ONEDNN();
  for (const char* text : {"pool: MAX kernel_size: 3 stride: 2", "pool: MAX kernel_size: 2 stride: 2",
                           "pool: MAX kernel_size: 3 stride: 1 pad: 1", "pool: AVE kernel_size: 3 stride: 1 pad: 1",
                           "pool: AVE kernel_size: 7 stride: 1", "pool: AVE global_pooling: true"}) {
    SCOPED_TRACE(text);
    std::vector<std::vector<float>> y, dx;
    for (const char* engine : {"CAFFE", "ONEDNN"}) {
      LayerFixture f("type: 'Pooling' pooling_param { " + std::string(text) + " engine: " + engine + " }",
                     {{4, 16, 15, 15}});
      ASSERT_STREQ(f.layer().chosen_engine(), engine[0] == 'C' ? "caffe" : "onednn");
      std::mt19937 rng(11);
      std::normal_distribution<float> normal;
      for (int64_t i = 0; i < f.bottom(0).count(); ++i) f.bottom(0).data()[i] = std::max(0.0f, normal(rng));
      f.Forward();
      for (int64_t i = 0; i < f.top(0).count(); ++i) f.top(0).diff()[i] = normal(rng);
      f.Backward();
      y.emplace_back(f.top(0).data(), f.top(0).data() + f.top(0).count());
      dx.emplace_back(f.bottom(0).diff(), f.bottom(0).diff() + f.bottom(0).count());
    }
    for (size_t i = 0; i < y[0].size(); ++i) ASSERT_NEAR(y[0][i], y[1][i], 1e-6f * (1 + std::abs(y[0][i]))) << i;
    for (size_t i = 0; i < dx[0].size(); ++i) ASSERT_NEAR(dx[0][i], dx[1][i], 1e-5f * (1 + std::abs(dx[0][i]))) << i;
  }
}

// engine CAFFE keeps Cortado's loops; engine ONEDNN takes oneDNN where it computes what Caffe does,
// else Cortado's (the mask top, STOCHASTIC, an AVE window cut by the border); otherwise the CPU engine
// setting decides, timing the two under auto, the same choice for every layer of a shape.
TEST(Pooling, ThePrototxtsEngineThenTheSettingDecide) {
  const std::vector<int> shape{2, 8, 12, 12};
  const auto max = [](const std::string& engine) {
    return "type: 'Pooling' pooling_param { pool: MAX kernel_size: 3 stride: 2 " +
           (engine.empty() ? "" : "engine: " + engine + " ") + "}";
  };
  ExpectThePrototxtsEngineThenTheSettingDecide(max, shape, "caffe", {"caffe", "onednn"}, [&] {
    EXPECT_STREQ(LayerFixture(max("ONEDNN"), {shape}, 2).layer().chosen_engine(), "caffe");
    EXPECT_STREQ(LayerFixture("type: 'Pooling' pooling_param { pool: AVE kernel_size: 3 stride: 2 engine: ONEDNN }",
                              {{1, 1, 6, 6}}).layer().chosen_engine(), "caffe");  // the last window is cut
    EXPECT_EQ(LayerFixture("type: 'Pooling' phase: TEST pooling_param { pool: STOCHASTIC kernel_size: 2 stride: 2 }",
                           {shape}).layer().chosen_engine(), nullptr);
  });
}

// ---- STOCHASTIC ------------------------------------------------------------------------------------

TEST(Pooling, StochasticTestPhaseByHand) {
  // Four 2×2 windows of one 4×4 plane: Σx²/Σx, or 0 when Σx ≤ 0.
  LayerFixture f("type: 'Pooling' phase: TEST pooling_param { pool: STOCHASTIC kernel_size: 2 stride: 2 }",
                 {{1, 1, 4, 4}});
  const float in[] = {1, 2, 0, 0,
                      3, 4, 0, 0,
                      0, 2, -1, -2,
                      0, 2, 1, 0};
  std::copy(in, in + 16, f.bottom(0).data());
  f.Forward();
  const float out[] = {(1 + 4 + 9 + 16) / 10.0f, 0.0f, (4 + 4) / 4.0f, 0.0f};
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(f.top(0).data()[i], out[i]) << i;
  // Backward: dx = dy·(2x − y)/Σx in windows with Σx > 0, else 0.
  for (int i = 0; i < 4; ++i) f.top(0).diff()[i] = 1.0f;
  f.Backward();
  EXPECT_FLOAT_EQ(f.bottom(0).diff()[0], (2 * 1 - 3.0f) / 10);
  EXPECT_FLOAT_EQ(f.bottom(0).diff()[5], (2 * 4 - 3.0f) / 10);
  EXPECT_FLOAT_EQ(f.bottom(0).diff()[9], (2 * 2 - 2.0f) / 4);
  EXPECT_FLOAT_EQ(f.bottom(0).diff()[8], (2 * 0 - 2.0f) / 4);
  EXPECT_FLOAT_EQ(f.bottom(0).diff()[2], 0.0f);
  EXPECT_FLOAT_EQ(f.bottom(0).diff()[10], 0.0f);
}

TEST(Pooling, StochasticTestPhaseGradientCheck) {
  for (const char* text : {"kernel_size: 2 stride: 2", "kernel_size: 3 stride: 2", "kernel_h: 3 kernel_w: 2 stride: 1",
                           "global_pooling: true"}) {
    SCOPED_TRACE(text);
    LayerFixture f(std::string("type: 'Pooling' phase: TEST pooling_param { pool: STOCHASTIC ") + text + " }",
                   {{2, 2, 5, 6}});
    FillUniform(&f.bottom(0), f.rng(), 0.5f, 2.0f);
    CheckGradient(f);
  }
}

TEST(Pooling, StochasticTrainSamplesInsideTheWindow) {
  // Overlapping 3×3 windows, stride 2, on non-negative values with many zeros: every output is one of
  // its window's values, never a zero when the window has a positive value, and Backward routes dy to
  // exactly the sampled elements.
  LayerFixture f("type: 'Pooling' phase: TRAIN pooling_param { pool: STOCHASTIC kernel_size: 3 stride: 2 }",
                 {{2, 3, 9, 8}});
  const int h = 9, w = 8, oh = f.top(0).shape(2), ow = f.top(0).shape(3);
  ASSERT_EQ(oh, 4);
  ASSERT_EQ(ow, 4);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> value(0.0f, 1.0f);
  for (int64_t i = 0; i < f.bottom(0).count(); ++i) {
    const float v = value(rng);
    f.bottom(0).data()[i] = v < 0.5f ? 0.0f : v;
  }
  for (int round = 0; round < 3; ++round) {
    f.Forward();
    std::vector<float> routed(f.bottom(0).count(), 0.0f);
    for (int p = 0; p < 6; ++p) {
      const float* plane = f.bottom(0).data() + p * h * w;
      for (int y = 0; y < oh; ++y)
        for (int x = 0; x < ow; ++x) {
          const int q = (p * oh + y) * ow + x;
          const float out = f.top(0).data()[q];
          bool positive = false;
          for (int i = 2 * y; i < std::min(2 * y + 3, h); ++i)
            for (int j = 2 * x; j < std::min(2 * x + 3, w); ++j) positive |= plane[i * w + j] > 0;
          // A window of zeros yields its first element (the running sum 0 reaches 0).
          int where = positive ? -1 : p * h * w + 2 * y * w + 2 * x;
          for (int i = 2 * y; i < std::min(2 * y + 3, h) && positive; ++i)
            for (int j = 2 * x; j < std::min(2 * x + 3, w); ++j)
              if (where < 0 && plane[i * w + j] == out && out > 0) where = p * h * w + i * w + j;
          ASSERT_GE(where, 0) << "output " << q << " = " << out << " is not a positive value of its window";
          if (!positive) ASSERT_EQ(out, 0.0f);
          f.top(0).diff()[q] = q + 1.0f;
          routed[where] += q + 1.0f;  // values are distinct, so the sampled element is `where`
        }
    }
    f.Backward();
    for (size_t i = 0; i < routed.size(); ++i) ASSERT_FLOAT_EQ(f.bottom(0).diff()[i], routed[i]) << i;
  }
}

TEST(Pooling, StochasticTrainFrequenciesFollowTheValues) {
  // 2000 planes of one 2×2 window {0, 1, 3, 0}: 1 is drawn a quarter of the time, 3 three quarters,
  // a zero never.
  LayerFixture f("type: 'Pooling' phase: TRAIN pooling_param { pool: STOCHASTIC kernel_size: 2 stride: 2 }",
                 {{1000, 2, 2, 2}});
  for (int p = 0; p < 2000; ++p) {
    float* plane = f.bottom(0).data() + 4 * p;
    plane[0] = 0, plane[1] = 1, plane[2] = 3, plane[3] = 0;
  }
  std::map<float, int> counts;
  for (int round = 0; round < 2; ++round) {
    f.Forward();
    for (int p = 0; p < 2000; ++p) ++counts[f.top(0).data()[p]];
  }
  EXPECT_EQ(counts.size(), 2u);
  EXPECT_EQ(counts[1.0f] + counts[3.0f], 4000);
  EXPECT_NEAR(counts[3.0f] / 4000.0, 0.75, 0.03);  // 4.4 standard deviations
}

TEST(Pooling, StochasticTrainIsReproducibleBySeed) {
  const std::string text = "type: 'Pooling' phase: TRAIN pooling_param { pool: STOCHASTIC kernel_size: 3 stride: 3 }";
  auto run = [&](uint32_t seed) {
    LayerFixture f(text, {{4, 4, 9, 9}}, 1, seed);
    std::mt19937 rng(1);
    FillUniform(&f.bottom(0), rng, 0.0f, 1.0f);
    f.Forward();
    std::vector<float> first(f.top(0).data(), f.top(0).data() + f.top(0).count());
    f.Forward();  // a fresh draw
    std::vector<float> second(f.top(0).data(), f.top(0).data() + f.top(0).count());
    return std::make_pair(first, second);
  };
  const auto a = run(5), b = run(5), c = run(6);
  EXPECT_EQ(a.first, b.first);
  EXPECT_EQ(a.second, b.second);
  EXPECT_NE(a.first, a.second);
  EXPECT_NE(a.first, c.first);
}

// ---- 16-bit storage ---------------------------------------------------------------------------------

// MAX and AVE on bf16 and fp16 blobs (x, y, dy, dx) give, forward and backward, exactly the float
// layer's results on the same 16-bit values, each rounded once: the same windows, maxima (ties to the
// first) and float sums, in the same order. The windows: the CPU's 2×2 and 3×3 paths, padding, CEIL
// windows cut by the border, an empty window, overlapping windows (several gradients summed into one
// dx before its rounding) and global pooling. oneDNN, asked for or not, is not chosen: its pooling here
// is float only.
TEST(Pooling, SixteenBitStorageIsTheFloatPoolingRoundedOnce) {
  const std::vector<int> shape{2, 3, 7, 8};
  const char* windows[] = {
      "pool: MAX kernel_size: 2 stride: 2",
      "pool: MAX kernel_size: 3 stride: 2 pad: 1",
      "pool: MAX kernel_size: 3 stride: 2",  // CEIL: the last column of windows is cut
      "pool: MAX kernel_size: 3 stride: 1",
      "pool: MAX kernel_h: 3 kernel_w: 2 stride_h: 2 stride_w: 1 pad_h: 1 pad_w: 0 round_mode: FLOOR",
      "pool: MAX kernel_size: 1 stride: 3",  // CEIL leaves the last column's windows empty
      "pool: MAX global_pooling: true",
      "pool: AVE kernel_size: 3 stride: 2 pad: 1",
      "pool: AVE kernel_size: 3 stride: 2",
      "pool: AVE kernel_size: 3 stride: 1 pad: 1",
      "pool: AVE kernel_h: 2 kernel_w: 3 stride_h: 3 stride_w: 2 pad_h: 1 pad_w: 2",
      "pool: AVE kernel_size: 1 stride: 3",
      "pool: AVE global_pooling: true",
  };
  int nonzero_dx = 0;
  for (DataType type : {DataType::kBFloat16, DataType::kFloat16})
    for (const char* window : windows)
      for (const std::string& engine : PrototxtCpuEngines()) {
        const std::string text = std::string("type: 'Pooling' pooling_param { ") + window + " engine: ";
        SCOPED_TRACE(std::string(DataTypeName(type)) + " " + window + " engine: " + engine);
        TypedPooling half(text + engine + " }", shape, type);
        TypedPooling full(text + "CAFFE }", shape, DataType::kFloat);
        EXPECT_STREQ(half.layer().chosen_engine(), "caffe");
        ASSERT_EQ(half.top().shape(), full.top().shape());
        ASSERT_EQ(half.top().data_type(), type);
        const std::vector<float> x = GaussianIn(type, Blob(shape).count(), 3);
        const std::vector<float> dy = GaussianIn(type, half.top().count(), 4);
        half.Run(x, dy);
        full.Run(x, dy);
        for (size_t i = 0; i < half.y.size(); ++i) ASSERT_EQ(half.y[i], RoundedTo(type, full.y[i])) << "y " << i;
        for (size_t i = 0; i < half.dx.size(); ++i) {
          ASSERT_EQ(half.dx[i], RoundedTo(type, full.dx[i])) << "dx " << i;
          nonzero_dx += half.dx[i] != 0;
        }
      }
  EXPECT_GT(nonzero_dx, 1000);  // the gradients were exercised
}

// What the net's storage plan asks (channels_last.hpp): 16-bit for MAX and AVE with one top on either
// device, float only for STOCHASTIC and a MAX with the mask top; NHWC on the GPU alone, for the same.
// The GPU computes MAX and AVE with one top on 16-bit storage and channels-last. The CPU computes them
// on 16-bit storage only where oneDNN does not pool (engine CAFFE): oneDNN's float pooling behind Casts
// is the faster of the two.
TEST(Pooling, TellsThePlanWhereItComputesOn16BitsAndChannelsLast) {
  const LayerParameter max = ParseLayer("type: 'Pooling' top: 'y' pooling_param { pool: MAX kernel_size: 2 }");
  const LayerParameter ave = ParseLayer("type: 'Pooling' top: 'y' pooling_param { pool: AVE kernel_size: 2 }");
  const LayerParameter masked =
      ParseLayer("type: 'Pooling' top: 'y' top: 'mask' pooling_param { pool: MAX kernel_size: 2 }");
  const LayerParameter stochastic =
      ParseLayer("type: 'Pooling' top: 'y' pooling_param { pool: STOCHASTIC kernel_size: 2 }");
  for (const LayerParameter* layer : {&max, &ave, &masked, &stochastic}) {
    const bool typed = layer == &max || layer == &ave;
    for (Device device : {Device::kCPU, Device::kGPU}) EXPECT_TRUE(PoolingComputesOn(*layer, FLOAT, device));
    EXPECT_EQ(PoolingComputesOn(*layer, BFLOAT16, Device::kGPU), typed) << layer->DebugString();
    EXPECT_EQ(PoolingComputesOn(*layer, FLOAT16, Device::kGPU), typed) << layer->DebugString();
    EXPECT_EQ(PoolingRunsChannelsLast(*layer, Device::kGPU), typed) << layer->DebugString();
    EXPECT_FALSE(PoolingRunsChannelsLast(*layer, Device::kCPU)) << layer->DebugString();
    LayerParameter caffe = *layer;
    caffe.mutable_pooling_param()->set_engine(PoolingParameter::CAFFE);
    EXPECT_EQ(PoolingComputesOn(caffe, BFLOAT16, Device::kCPU), typed) << caffe.DebugString();
    EXPECT_EQ(PoolingComputesOn(caffe, FLOAT16, Device::kCPU), typed) << caffe.DebugString();
    if (!OneDnnEnabled()) continue;
    LayerParameter onednn = *layer;
    onednn.mutable_pooling_param()->set_engine(PoolingParameter::ONEDNN);
    EXPECT_FALSE(PoolingComputesOn(onednn, BFLOAT16, Device::kCPU)) << onednn.DebugString();
  }
}

namespace {
std::string ErrorOf(const std::string& pool_param, const std::vector<int>& shape, int tops = 1) {
  try {
    LayerFixture f("name: 'pool7' type: 'Pooling' pooling_param { " + pool_param + " }", {shape}, tops);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST(Pooling, UserErrors) {
  const std::string stochastic = ErrorOf("pool: STOCHASTIC kernel_size: 3 pad: 1", {1, 1, 4, 4});
  EXPECT_NE(stochastic.find("pool7"), std::string::npos) << stochastic;
  EXPECT_NE(stochastic.find("padding is implemented only for AVE and MAX"), std::string::npos) << stochastic;
  EXPECT_NE(ErrorOf("pool: STOCHASTIC kernel_size: 2", {1, 1, 4, 4}, 2).find("at most 1 top"), std::string::npos);
  EXPECT_NE(ErrorOf("kernel_size: 2 pad: 2", {1, 1, 4, 4}).find("smaller than the kernel"), std::string::npos);
  EXPECT_NE(ErrorOf("stride: 2", {1, 1, 4, 4}).find("kernel_size"), std::string::npos);
  EXPECT_NE(ErrorOf("global_pooling: true kernel_size: 2", {1, 1, 4, 4}).find("global_pooling"), std::string::npos);
  EXPECT_NE(ErrorOf("kernel_size: 2 kernel_h: 2 kernel_w: 2", {1, 1, 4, 4}).find("not both"), std::string::npos);
  const std::string too_big = ErrorOf("kernel_size: 5", {1, 1, 3, 3});
  EXPECT_NE(too_big.find("larger than the padded input"), std::string::npos) << too_big;
  EXPECT_NE(ErrorOf("kernel_size: 2", {1, 4, 4}).find("4-D"), std::string::npos);
  // Only MAX has a mask top.
  EXPECT_NE(ErrorOf("pool: AVE kernel_size: 2", {1, 1, 4, 4}, 2).find("at most 1 top"), std::string::npos);
  // 16-bit storage for MAX and AVE with one top alone; channels-last on the GPU alone.
  const auto typed_error = [](const std::string& pool_param, DataType type, bool nhwc, int tops) {
    return ErrorOf([&] {
      TypedPooling("name: 'pool7' type: 'Pooling' pooling_param { " + pool_param + " }", {1, 2, 4, 4}, type, nhwc,
                   Device::kCPU, tops);
    });
  };
  const std::string mask_top = typed_error("pool: MAX kernel_size: 2", DataType::kBFloat16, false, 2);
  EXPECT_NE(mask_top.find("pool7"), std::string::npos) << mask_top;
  EXPECT_NE(mask_top.find("only MAX and AVE pooling with one top compute on 16-bit storage"), std::string::npos)
      << mask_top;
  EXPECT_NE(typed_error("pool: STOCHASTIC kernel_size: 2", DataType::kFloat16, false, 1).find("16-bit storage"),
            std::string::npos);
  const std::string nhwc = typed_error("pool: MAX kernel_size: 2", DataType::kFloat, true, 1);
  EXPECT_NE(nhwc.find("channels-last (NHWC) bottom is pooled only on the GPU"), std::string::npos) << nhwc;
}

}  // namespace cortado::test
