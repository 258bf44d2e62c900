// lrn_test.cpp — LRN across and within channels: hand-worked values (and that WITHIN_CHANNEL ignores
// k, as Caffe's composed sub-layers do), a reference written from the definitions (within: Caffe's
// square → padded AVE pooling → power → product), gradient checks, and parameter errors.
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "cortado/error.hpp"
#include "cortado/layer_registry.hpp"
#include "cpu_engines.hpp"
#include "layers/onednn_engine.hpp"
#include "test_util.hpp"

namespace cortado::test {

namespace {

// y from the definitions, in double. Within: AVE pooling of x² with kernel n, pad (n − 1)/2, stride 1,
// divided by the window clipped to the padded image (always n² here), then (1 + alpha · avg)^−beta.
std::vector<double> Reference(const Blob& x, int n, double alpha, double beta, double k, bool across) {
  const int N = x.shape(0), C = x.shape(1), H = x.shape(2), W = x.shape(3);
  const int pad = (n - 1) / 2;
  std::vector<double> y(static_cast<size_t>(x.count()));
  for (int a = 0; a < N; ++a)
    for (int c = 0; c < C; ++c)
      for (int h = 0; h < H; ++h)
        for (int w = 0; w < W; ++w) {
          double scale;
          if (across) {
            double sum = 0;
            for (int cc = c - pad; cc <= c + pad; ++cc)
              if (cc >= 0 && cc < C) sum += std::pow(x.data_at(a, cc, h, w), 2);
            scale = k + alpha / n * sum;
          } else {
            const int hstart = h - pad, wstart = w - pad;
            const int hend = std::min(hstart + n, H + pad), wend = std::min(wstart + n, W + pad);
            const int pool_size = (hend - hstart) * (wend - wstart);
            double sum = 0;
            for (int hh = std::max(hstart, 0); hh < std::min(hend, H); ++hh)
              for (int ww = std::max(wstart, 0); ww < std::min(wend, W); ++ww)
                sum += std::pow(x.data_at(a, c, hh, ww), 2);
            scale = 1 + alpha * (sum / pool_size);
          }
          y[x.offset(a, c, h, w)] = x.data_at(a, c, h, w) * std::pow(scale, -beta);
        }
  return y;
}

}  // namespace

TEST(LRN, AcrossChannelsHandWorked) {
  // Channels 1, 2, 3 at one pixel; n = 3, alpha/n = 1, beta = 1/2, k = 1:
  // scale = 1 + (1 + 4), 1 + (1 + 4 + 9), 1 + (4 + 9) = 6, 15, 14.
  LayerFixture f("type: 'LRN' lrn_param { local_size: 3 alpha: 3 beta: 0.5 k: 1 }", {{1, 3, 1, 1}});
  const float x[] = {1, 2, 3};
  std::copy(x, x + 3, f.bottom(0).data());
  f.Forward();
  EXPECT_FLOAT_EQ(f.top(0).data()[0], 1 / std::sqrt(6.0f));
  EXPECT_FLOAT_EQ(f.top(0).data()[1], 2 / std::sqrt(15.0f));
  EXPECT_FLOAT_EQ(f.top(0).data()[2], 3 / std::sqrt(14.0f));
  // dy = (1, 0, 0): dx_i = dy_i·scale_i^−β − 2β·(α/n)·x_i·Σ_window dy·y/scale, with only channel 0's
  // ratio y0/6 = 1/(6√6) non-zero; it lies in the windows of channels 0 and 1.
  const float dy[] = {1, 0, 0};
  std::copy(dy, dy + 3, f.top(0).diff());
  f.Backward();
  const float ratio = 1 / (6 * std::sqrt(6.0f));
  EXPECT_NEAR(f.bottom(0).diff()[0], 1 / std::sqrt(6.0f) - 1 * ratio, 1e-6);
  EXPECT_NEAR(f.bottom(0).diff()[1], -2 * ratio, 1e-6);
  EXPECT_NEAR(f.bottom(0).diff()[2], 0, 1e-6);
}

TEST(LRN, WithinChannelHandWorkedIgnoresK) {
  // A 1×3 row [1, 2, 3], n = 3, alpha = 9 (alpha/n² = 1), beta = 1. Each 3×3 window covers the
  // element and its row neighbours: Σx² = 5, 14, 13, so scale = 6, 15, 14 whatever k is.
  for (const char* k : {"1", "5"}) {
    SCOPED_TRACE(k);
    LayerFixture f(std::string("type: 'LRN' lrn_param { local_size: 3 alpha: 9 beta: 1 norm_region: WITHIN_CHANNEL k: ") +
                       k + " }",
                   {{1, 1, 1, 3}});
    const float x[] = {1, 2, 3};
    std::copy(x, x + 3, f.bottom(0).data());
    f.Forward();
    EXPECT_FLOAT_EQ(f.top(0).data()[0], 1 / 6.0f);
    EXPECT_FLOAT_EQ(f.top(0).data()[1], 2 / 15.0f);
    EXPECT_FLOAT_EQ(f.top(0).data()[2], 3 / 14.0f);
  }
  // A 2×2 image: every 3×3 window (pad 1) holds all four pixels, Σx² = 30, and the divisor is still
  // n² = 9 (padding counts as zeros): scale = 1 + 9 · 30/9 = 31.
  LayerFixture f("type: 'LRN' lrn_param { local_size: 3 alpha: 9 beta: 1 norm_region: WITHIN_CHANNEL }",
                 {{1, 1, 2, 2}});
  for (int i = 0; i < 4; ++i) f.bottom(0).data()[i] = static_cast<float>(i + 1);
  f.Forward();
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(f.top(0).data()[i], (i + 1) / 31.0f);
}

TEST(LRN, MatchesTheDefinitions) {
  struct Case {
    const char* params;
    int n;
    double alpha, beta, k;
    bool across;
    std::vector<int> shape;
  };
  const Case cases[] = {
      {"local_size: 5 alpha: 0.0001 beta: 0.75", 5, 1e-4, 0.75, 1, true, {2, 7, 3, 3}},
      {"local_size: 3 alpha: 2 beta: 0.6 k: 2", 3, 2, 0.6, 2, true, {2, 2, 3, 2}},
      {"local_size: 3 alpha: 5e-05 beta: 0.75 norm_region: WITHIN_CHANNEL", 3, 5e-5, 0.75, 1, false, {2, 2, 5, 4}},
      {"local_size: 5 alpha: 1.5 beta: 0.5 k: 3 norm_region: WITHIN_CHANNEL", 5, 1.5, 0.5, 1, false, {1, 2, 6, 7}},
  };
  for (const std::string& engine : PrototxtCpuEngines()) {
   for (const Case& c : cases) {
    SCOPED_TRACE(engine + " " + c.params);
    LayerFixture f(std::string("type: 'LRN' lrn_param { ") + c.params + " engine: " + engine + " }", {c.shape});
    EXPECT_STREQ(f.layer().chosen_engine(), engine == "ONEDNN" ? "onednn" : "caffe");  // ONEDNN: channel blocks
    f.FillBottoms(2.0f);
    f.Forward();
    const std::vector<double> y = Reference(f.bottom(0), c.n, c.alpha, c.beta, c.k, c.across);
    for (int64_t i = 0; i < f.top(0).count(); ++i) EXPECT_NEAR(f.top(0).data()[i], y[i], 1e-5) << i;
   }
  }
}

TEST(LRN, GradientCheck) {
  for (const std::string& engine : PrototxtCpuEngines())
    for (const char* params : {"local_size: 5 alpha: 0.5 beta: 0.75", "local_size: 3 alpha: 2 beta: 0.6 k: 2",
                               "local_size: 3 alpha: 2 beta: 0.75 norm_region: WITHIN_CHANNEL",
                               "local_size: 5 alpha: 3 beta: 0.5 norm_region: WITHIN_CHANNEL"}) {
      SCOPED_TRACE(engine + " " + params);
      LayerFixture f(std::string("type: 'LRN' lrn_param { ") + params + " engine: " + engine + " }", {{2, 6, 4, 3}});
      f.FillBottoms();
      CheckGradient(f);
    }
}

// The engines on AlexNet's and GoogLeNet's LRN settings at a real size, forward and backward: Cortado's
// loops, oneDNN on channel blocks (the layer's engine ONEDNN) and oneDNN on NCHW (through the kernel
// interface) agree up to rounding.
TEST(LRN, EnginesAgreeOnRealSizes) {
  SKIP_WITHOUT_ONEDNN();
  struct Case {
    const char* params;
    bool across;
    int size;
    float alpha;
  };
  for (const Case& c : {Case{"local_size: 5 alpha: 0.0001 beta: 0.75", true, 5, 1e-4f},
                        Case{"local_size: 3 alpha: 5e-05 beta: 0.75 norm_region: WITHIN_CHANNEL", false, 3, 5e-5f}}) {
    SCOPED_TRACE(c.params);
    const std::vector<int> shape{2, 32, 13, 13};
    std::vector<float> x, dy;
    std::vector<std::vector<float>> y, dx;
    for (const char* engine : {"CAFFE", "ONEDNN"}) {
      LayerFixture f(std::string("type: 'LRN' lrn_param { ") + c.params + " engine: " + engine + " }", {shape});
      std::mt19937 rng(3);
      std::normal_distribution<float> normal(0.0f, 20.0f);  // AlexNet's activations: the scale matters
      for (int64_t i = 0; i < f.bottom(0).count(); ++i) f.bottom(0).data()[i] = normal(rng);
      f.Forward();
      for (int64_t i = 0; i < f.top(0).count(); ++i) f.top(0).diff()[i] = normal(rng) / 20;
      f.Backward();
      x.assign(f.bottom(0).data(), f.bottom(0).data() + f.bottom(0).count());
      dy.assign(f.top(0).diff(), f.top(0).diff() + f.top(0).count());
      y.emplace_back(f.top(0).data(), f.top(0).data() + f.top(0).count());
      dx.emplace_back(f.bottom(0).diff(), f.bottom(0).diff() + f.bottom(0).count());
    }
    const float n = c.across ? c.size : c.size * c.size;
    const LrnShape s{shape[0], shape[1], shape[2], shape[3], c.size, c.across, 1.0f, c.alpha / n, 0.75f};
    std::string why;
    const OneDnnLrnPtr plain = CreateOneDnnLrn(s, OneDnnLayout::kPlain, &why);
    ASSERT_TRUE(plain) << why;
    std::vector<float> workspace(OneDnnLrnWorkspaceBytes(*plain) / 4 + 1), scratch(OneDnnLrnScratchBytes(*plain) / 4 + 1);
    y.emplace_back(x.size()), dx.emplace_back(x.size());
    OneDnnLrnForward(*plain, x.data(), y[2].data(), workspace.data(), scratch.data());
    OneDnnLrnBackward(*plain, x.data(), dy.data(), dx[2].data(), workspace.data(), scratch.data());
    for (int e : {1, 2}) {
      SCOPED_TRACE(e == 1 ? "channel blocks" : "NCHW");
      for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(y[0][i], y[e][i], 1e-5f * (1 + std::abs(y[0][i]))) << i;
      for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(dx[0][i], dx[e][i], 1e-5f * (1 + std::abs(dx[0][i]))) << i;
    }
  }
}

// engine CAFFE keeps Cortado's loops, engine ONEDNN takes oneDNN's; otherwise the CPU engine setting
// decides, timing the two under auto, the same choice for every layer of a shape.
TEST(LRN, ThePrototxtsEngineThenTheSettingDecide) {
  const auto lrn = [](const std::string& engine) {
    return "type: 'LRN' lrn_param { local_size: 5 alpha: 0.0001 beta: 0.75 " +
           (engine.empty() ? "" : "engine: " + engine + " ") + "}";
  };
  ExpectThePrototxtsEngineThenTheSettingDecide(lrn, {2, 16, 9, 9}, "caffe", {"caffe", "onednn", "onednn_plain"});
}

TEST(LRN, ParameterErrors) {
  const std::string even = ErrorOf([] { LayerFixture("name: 'norm1' type: 'LRN' lrn_param { local_size: 4 }", {{1, 3, 2, 2}}); });
  EXPECT_NE(even.find("norm1"), std::string::npos) << even;
  EXPECT_NE(even.find("odd"), std::string::npos) << even;
  const std::string axes = ErrorOf([] { LayerFixture("type: 'LRN'", {{2, 3}}); });
  EXPECT_NE(axes.find("4-D"), std::string::npos) << axes;
  Context ctx;
  Blob blob(std::vector<int>{1, 3, 2, 2});
  auto layer = LayerRegistry::Create(ParseLayer("name: 'n' type: 'LRN'"), ctx);
  const std::string in_place = ErrorOf([&] { layer->SetUp({&blob}, {&blob}); });
  EXPECT_NE(in_place.find("in place"), std::string::npos) << in_place;
}

}  // namespace cortado::test
