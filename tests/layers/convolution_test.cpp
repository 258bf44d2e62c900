// convolution_test.cpp — Convolution against a hand-worked case and a direct seven-loop convolution
// (forward and backward) written here, over pad / stride / dilation / group / rectangular kernels /
// bias on and off; batches split into chunks (columns kept for backward, or unrolled again);
// several bottoms; frozen weights; finite-difference gradients; and the user errors. The CPU engines
// (cpu_engine.hpp): oneDNN in its native and plain layouts against the same loops, and which engine the
// prototxt's engine and the process's setting give.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <sstream>

#include "cortado/cpu_engine.hpp"
#include "cortado/error.hpp"
#include "cpu_engines.hpp"
#include "layers/onednn_engine.hpp"
#include "test_util.hpp"

namespace cortado::test {
namespace {

struct ConvCase {
  int n, c, h, w, m;
  int kh, kw, ph, pw, sh, sw, dh, dw;
  int group;
  bool bias;
};

// engine: the prototxt's (DEFAULT when empty).
std::string LayerText(const ConvCase& k, const std::string& engine = "") {
  std::ostringstream s;
  s << "type: 'Convolution' convolution_param { "
    << (engine.empty() ? "" : "engine: " + engine + " ") << "num_output: " << k.m << " kernel_h: " << k.kh
    << " kernel_w: " << k.kw << " pad_h: " << k.ph << " pad_w: " << k.pw << " stride_h: " << k.sh
    << " stride_w: " << k.sw << " dilation: " << k.dh << " dilation: " << k.dw << " group: " << k.group
    << " bias_term: " << (k.bias ? "true" : "false")
    << " weight_filler { type: 'gaussian' std: 0.5 } bias_filler { type: 'gaussian' std: 0.5 } }";
  return s.str();
}

int OutSize(int in, int k, int p, int s, int d) { return (in + 2 * p - (d * (k - 1) + 1)) / s + 1; }

// Calls visit(x index, w index, y index) for every product term x·w that feeds y.
template <typename Visit>
void ForEachTerm(const ConvCase& k, Visit visit) {
  const int oh_n = OutSize(k.h, k.kh, k.ph, k.sh, k.dh), ow_n = OutSize(k.w, k.kw, k.pw, k.sw, k.dw);
  const int cg = k.c / k.group, mg = k.m / k.group;
  for (int n = 0; n < k.n; ++n)
    for (int m = 0; m < k.m; ++m)
      for (int oh = 0; oh < oh_n; ++oh)
        for (int ow = 0; ow < ow_n; ++ow)
          for (int c = 0; c < cg; ++c)
            for (int i = 0; i < k.kh; ++i)
              for (int j = 0; j < k.kw; ++j) {
                const int ih = oh * k.sh - k.ph + i * k.dh, iw = ow * k.sw - k.pw + j * k.dw;
                if (ih < 0 || ih >= k.h || iw < 0 || iw >= k.w) continue;
                const int ch = m / mg * cg + c;
                visit(((int64_t(n) * k.c + ch) * k.h + ih) * k.w + iw,
                      ((int64_t(m) * cg + c) * k.kh + i) * k.kw + j,
                      ((int64_t(n) * k.m + m) * oh_n + oh) * ow_n + ow);
              }
}

// Checks forward, and backward for top diff = a fixed pattern, against the direct loops.
void CheckAgainstDirect(const ConvCase& k, LayerFixture& f) {
  f.FillBottoms();
  const Blob& weights = *f.layer().blobs()[0];
  const float* x = f.bottom(0).data();
  const float* w = weights.data();
  std::vector<double> y(f.top(0).count(), 0.0), dx(f.bottom(0).count(), 0.0), dw(weights.count(), 0.0);
  std::vector<float> dy(f.top(0).count());
  for (size_t i = 0; i < dy.size(); ++i) dy[i] = static_cast<float>(i % 7) - 3.0f;
  ForEachTerm(k, [&](int64_t xi, int64_t wi, int64_t yi) {
    y[yi] += double(x[xi]) * w[wi];
    dx[xi] += double(dy[yi]) * w[wi];
    dw[wi] += double(dy[yi]) * x[xi];
  });
  const int64_t per_m = f.top(0).count() / k.n / k.m;
  std::vector<double> db(k.m, 0.0);
  for (size_t i = 0; i < y.size(); ++i) {
    const int m = static_cast<int>(i / per_m % k.m);
    if (k.bias) y[i] += f.layer().blobs()[1]->data()[m];
    db[m] += dy[i];
  }
  f.Forward();
  for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(f.top(0).data()[i], y[i], 1e-4 * (1 + std::abs(y[i]))) << i;
  std::copy(dy.begin(), dy.end(), f.top(0).diff());
  f.Backward();
  for (size_t i = 0; i < dx.size(); ++i) ASSERT_NEAR(f.bottom(0).diff()[i], dx[i], 1e-4 * (1 + std::abs(dx[i]))) << i;
  for (size_t i = 0; i < dw.size(); ++i) ASSERT_NEAR(weights.diff()[i], dw[i], 1e-3 * (1 + std::abs(dw[i]))) << i;
  if (!k.bias) return;
  for (int m = 0; m < k.m; ++m) ASSERT_NEAR(f.layer().blobs()[1]->diff()[m], db[m], 1e-3 * (1 + std::abs(db[m])));
}

}  // namespace

TEST(Convolution, HandWorkedCase) {
  // Input 3×3 = 1..9, one 2×2 kernel of ones, bias 0.5: each output is its patch's sum + 0.5.
  LayerFixture f("type: 'Convolution' convolution_param { num_output: 1 kernel_size: 2 "
                 "weight_filler { type: 'constant' value: 1 } bias_filler { type: 'constant' value: 0.5 } }",
                 {{1, 1, 3, 3}});
  ASSERT_EQ(f.top(0).shape(), (std::vector<int>{1, 1, 2, 2}));
  for (int i = 0; i < 9; ++i) f.bottom(0).data()[i] = i + 1.0f;
  f.Forward();
  const float expected[] = {12.5f, 16.5f, 24.5f, 28.5f};
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(f.top(0).data()[i], expected[i]);
  // Backward with dy = 1: dx counts how many windows cover each pixel; dW sums each tap's pixels.
  for (int i = 0; i < 4; ++i) f.top(0).diff()[i] = 1.0f;
  f.Backward();
  const float dx[] = {1, 2, 1, 2, 4, 2, 1, 2, 1};
  for (int i = 0; i < 9; ++i) EXPECT_FLOAT_EQ(f.bottom(0).diff()[i], dx[i]);
  const float dw[] = {12, 16, 24, 28};
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(f.layer().blobs()[0]->diff()[i], dw[i]);
  EXPECT_FLOAT_EQ(f.layer().blobs()[1]->diff()[0], 4.0f);
}

// An input without channels (found by fuzzing: sizing the column chunks divided by zero): every
// output is the bias.
TEST(Convolution, AnInputWithoutChannelsGivesTheBias) {
  LayerFixture f("type: 'Convolution' convolution_param { num_output: 3 kernel_size: 2 "
                 "bias_filler { type: 'constant' value: 0.25 } }",
                 {{2, 0, 4, 4}});
  ASSERT_EQ(f.top(0).shape(), (std::vector<int>{2, 3, 3, 3}));
  f.Forward();
  for (int64_t i = 0; i < f.top(0).count(); ++i) EXPECT_FLOAT_EQ(f.top(0).data()[i], 0.25f);
}

const ConvCase kCases[] = {
    // n c  h  w  m  kh kw ph pw sh sw dh dw group bias
    {2, 1, 8, 8, 4, 5, 5, 0, 0, 1, 1, 1, 1, 1, true},    // LeNet-like
    {2, 3, 7, 9, 5, 3, 3, 1, 1, 2, 2, 1, 1, 1, true},    // padded, strided
    {2, 4, 9, 8, 6, 3, 2, 2, 1, 1, 2, 2, 1, 2, false},   // rectangular, dilated, grouped
    {3, 6, 5, 4, 3, 1, 1, 0, 0, 1, 1, 1, 1, 3, true},    // 1×1, depthwise-like groups
    {2, 2, 5, 5, 2, 1, 1, 0, 0, 2, 2, 1, 1, 1, false},   // 1×1 strided
    {1, 2, 3, 4, 3, 5, 6, 1, 1, 1, 1, 1, 1, 1, true},    // kernel = padded input: one output
    {2, 4, 10, 7, 4, 3, 3, 3, 2, 3, 2, 2, 3, 4, true},   // everything at once
    {2, 32, 6, 6, 48, 3, 3, 1, 1, 1, 1, 1, 1, 1, true},  // channels in oneDNN's blocks of 16
};

TEST(Convolution, MatchesDirectConvolution) {
  for (const ConvCase& k : kCases) {
    SCOPED_TRACE(LayerText(k));
    LayerFixture f(LayerText(k), {{k.n, k.c, k.h, k.w}});
    EXPECT_EQ(f.top(0).shape(), (std::vector<int>{k.n, k.m, OutSize(k.h, k.kh, k.ph, k.sh, k.dh),
                                                  OutSize(k.w, k.kw, k.pw, k.sw, k.dw)}));
    EXPECT_EQ(f.layer().blobs()[0]->shape(), (std::vector<int>{k.m, k.c / k.group, k.kh, k.kw}));
    EXPECT_EQ(f.layer().blobs().size(), k.bias ? 2u : 1u);
    CheckAgainstDirect(k, f);
  }
}

TEST(Convolution, RepeatedFieldsGiveOneValueOrOnePerAxis) {
  LayerFixture f("type: 'Convolution' convolution_param { num_output: 2 kernel_size: 3 kernel_size: 2 "
                 "pad: 1 stride: 2 stride: 1 }", {{1, 1, 7, 7}});
  EXPECT_EQ(f.top(0).shape(), (std::vector<int>{1, 2, 4, 8}));
  EXPECT_EQ(f.layer().blobs()[0]->shape(), (std::vector<int>{2, 1, 3, 2}));
}

TEST(Convolution, ChunkedBatchMatchesDirectConvolution) {
  // 144·28² columns per image: chunks of 2, 2 and 1 images, the columns kept for backward.
  const ConvCase kept{5, 16, 30, 30, 4, 3, 3, 0, 0, 1, 1, 1, 1, 1, true};
  LayerFixture f(LayerText(kept), {{kept.n, kept.c, kept.h, kept.w}});
  CheckAgainstDirect(kept, f);
  // 9·596² columns per image: six batches' worth exceed 64 MiB, so backward unrolls each chunk
  // again.
  const ConvCase redone{6, 1, 598, 598, 1, 3, 3, 0, 0, 1, 1, 1, 1, 1, true};
  LayerFixture g(LayerText(redone), {{redone.n, redone.c, redone.h, redone.w}});
  CheckAgainstDirect(redone, g);
}

TEST(Convolution, SeveralBottomsShareTheWeights) {
  LayerFixture f("type: 'Convolution' convolution_param { num_output: 3 kernel_size: 3 pad: 1 "
                 "weight_filler { type: 'gaussian' } bias_filler { type: 'gaussian' } }",
                 {{2, 2, 5, 5}, {2, 2, 5, 5}}, 2);
  f.FillBottoms();
  std::copy(f.bottom(0).data(), f.bottom(0).data() + f.bottom(0).count(), f.bottom(1).data());
  f.bottom(1).data()[7] += 1.0f;
  f.Forward();
  // Same input except one pixel: the tops agree away from it.
  int same = 0;
  for (int64_t i = 0; i < f.top(0).count(); ++i) same += f.top(0).data()[i] == f.top(1).data()[i];
  EXPECT_GT(same, 0);
  EXPECT_LT(same, f.top(0).count());
  GradientCheckOptions o;
  CheckGradient(f, o);
}

TEST(Convolution, FrozenWeightsGetNoGradient) {
  const ConvCase k{2, 2, 6, 6, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, true};
  LayerFixture f(LayerText(k), {{k.n, k.c, k.h, k.w}});
  f.layer().set_param_propagate_down(0, false);
  f.layer().set_param_propagate_down(1, false);
  f.FillBottoms();
  f.Forward();
  for (int64_t i = 0; i < f.top(0).count(); ++i) f.top(0).diff()[i] = 1.0f;
  f.Backward();  // zeroes the parameter diffs first
  for (auto& p : f.layer().blobs())
    for (int64_t i = 0; i < p->count(); ++i) EXPECT_EQ(p->diff()[i], 0.0f);
  float sum = 0;
  for (int64_t i = 0; i < f.bottom(0).count(); ++i) sum += std::abs(f.bottom(0).diff()[i]);
  EXPECT_GT(sum, 0.0f);
}

TEST(Convolution, GradientCheck) {
  const ConvCase k{2, 4, 5, 5, 4, 3, 3, 1, 1, 2, 2, 1, 1, 2, true};
  LayerFixture f(LayerText(k), {{k.n, k.c, k.h, k.w}});
  f.FillBottoms();
  CheckGradient(f);
}

TEST(Convolution, DilatedRectangularGradientCheck) {
  const ConvCase k{2, 2, 7, 6, 3, 2, 3, 1, 2, 1, 2, 2, 1, 1, false};
  LayerFixture f(LayerText(k), {{k.n, k.c, k.h, k.w}});
  f.FillBottoms();
  CheckGradient(f);
}

namespace {
std::string ErrorOf(const std::string& text, const std::vector<int>& shape) {
  try {
    LayerFixture f("name: 'conv9' " + text, {shape});
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST(Convolution, UserErrors) {
  const std::string too_big = ErrorOf("type: 'Convolution' convolution_param { num_output: 1 kernel_size: 7 pad: 1 }",
                                      {1, 1, 4, 8});
  EXPECT_NE(too_big.find("conv9"), std::string::npos) << too_big;
  EXPECT_NE(too_big.find("kernel height 7"), std::string::npos) << too_big;
  EXPECT_NE(too_big.find("padded input height 6"), std::string::npos) << too_big;
  const std::string dilated = ErrorOf("type: 'Convolution' convolution_param { num_output: 1 kernel_size: 3 "
                                      "dilation: 3 }", {1, 1, 6, 6});
  EXPECT_NE(dilated.find("dilated extent 7"), std::string::npos) << dilated;
  const std::string group = ErrorOf("type: 'Convolution' convolution_param { num_output: 4 kernel_size: 1 group: 2 }",
                                    {1, 3, 4, 4});
  EXPECT_NE(group.find("3 channels are not divisible by group 2"), std::string::npos) << group;
  const std::string nd = ErrorOf("type: 'Convolution' convolution_param { num_output: 1 kernel_size: 1 }",
                                 {1, 1, 4, 4, 4});
  EXPECT_NE(nd.find("only 2-D convolution is supported"), std::string::npos) << nd;
  const std::string axis = ErrorOf("type: 'Convolution' convolution_param { num_output: 1 kernel_size: 1 axis: 2 }",
                                   {1, 1, 4, 4});
  EXPECT_NE(axis.find("only 2-D convolution is supported"), std::string::npos) << axis;
  EXPECT_NE(ErrorOf("type: 'Convolution' convolution_param { num_output: 1 }", {1, 1, 4, 4}).find("kernel_size"),
            std::string::npos);
  EXPECT_NE(ErrorOf("type: 'Convolution' convolution_param { num_output: 1 kernel_size: 1 kernel_size: 1 "
                    "kernel_size: 1 }", {1, 1, 4, 4}).find("one per spatial axis"),
            std::string::npos);
  EXPECT_NE(ErrorOf("type: 'Convolution' convolution_param { num_output: 1 kernel_size: 3 kernel_h: 3 kernel_w: 3 }",
                    {1, 1, 4, 4}).find("not both"),
            std::string::npos);
  EXPECT_NE(ErrorOf("type: 'Convolution' convolution_param { num_output: 1 kernel_size: 3 stride: 0 }",
                    {1, 1, 4, 4}).find("stride must be positive"),
            std::string::npos);
}

}  // namespace cortado::test

// ---- CPU engines ----------------------------------------------------------------------------------
namespace cortado::test {
namespace {

ConvGeometry GeometryOf(const ConvCase& k) {
  ConvGeometry g;
  g.channels = k.c, g.height = k.h, g.width = k.w, g.kernel_h = k.kh, g.kernel_w = k.kw, g.pad_h = k.ph,
  g.pad_w = k.pw, g.stride_h = k.sh, g.stride_w = k.sw, g.dilation_h = k.dh, g.dilation_w = k.dw;
  return g;
}

}  // namespace

TEST(ConvolutionEngines, OneDnnMatchesDirectConvolution) {
  SKIP_WITHOUT_ONEDNN();
  for (const ConvCase& k : kCases) {
    SCOPED_TRACE(LayerText(k, "ONEDNN"));
    LayerFixture f(LayerText(k, "ONEDNN"), {{k.n, k.c, k.h, k.w}});
    EXPECT_STREQ(f.layer().chosen_engine(), "onednn");
    CheckAgainstDirect(k, f);
  }
}

// Both layouts through the kernel interface, each backward run twice: the parameter gradients add up
// (Caffe's iter_size and shared weights rely on it) and the data gradient is overwritten.
TEST(ConvolutionEngines, OneDnnLayoutsMatchDirectConvolutionAndAccumulate) {
  SKIP_WITHOUT_ONEDNN();
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  for (OneDnnLayout layout : {OneDnnLayout::kPlain, OneDnnLayout::kNative}) {
    for (const ConvCase& k : kCases) {
      SCOPED_TRACE(std::string(OneDnnLayoutName(layout)) + " " + LayerText(k));
      const ConvGeometry g = GeometryOf(k);
      std::string why;
      const OneDnnConvolutionPtr conv = CreateOneDnnConvolution(k.n, k.m, k.group, g, k.bias, layout, &why);
      ASSERT_TRUE(conv) << why;
      const int64_t x_count = int64_t{k.n} * k.c * k.h * k.w, y_count = int64_t{k.n} * k.m * g.out_size();
      std::vector<float> x(x_count), w(int64_t{k.m} * (k.c / k.group) * k.kh * k.kw), b(k.m), dy(y_count);
      for (auto* v : {&x, &w, &b, &dy})
        for (float& e : *v) e = normal(rng);
      std::vector<double> y_ref(y_count, 0.0), dx_ref(x_count, 0.0), dw_ref(w.size(), 0.0), db_ref(k.m, 0.0);
      ForEachTerm(k, [&](int64_t xi, int64_t wi, int64_t yi) {
        y_ref[yi] += double(x[xi]) * w[wi];
        dx_ref[xi] += double(dy[yi]) * w[wi];
        dw_ref[wi] += double(dy[yi]) * x[xi];
      });
      for (int64_t i = 0; i < y_count; ++i) {
        const int m = static_cast<int>(i / g.out_size() % k.m);
        if (k.bias) y_ref[i] += b[m];
        db_ref[m] += dy[i];
      }
      std::vector<char> scratch(OneDnnConvolutionScratchBytes(*conv) + 64);
      void* s = scratch.data() + (64 - reinterpret_cast<uintptr_t>(scratch.data()) % 64) % 64;
      std::vector<float> y(y_count, -7.0f), dx(x_count, -7.0f), dw(w.size(), 0.0f), db(k.m, 0.0f);
      OneDnnConvolutionForward(*conv, x.data(), w.data(), k.bias ? b.data() : nullptr, y.data(), s);
      for (int64_t i = 0; i < y_count; ++i) ASSERT_NEAR(y[i], y_ref[i], 1e-4 * (1 + std::abs(y_ref[i]))) << i;
      for (int pass = 1; pass <= 2; ++pass) {
        OneDnnConvolutionBackward(*conv, x.data(), w.data(), dy.data(), dw.data(), k.bias ? db.data() : nullptr,
                                  dx.data(), s);
        for (int64_t i = 0; i < x_count; ++i) ASSERT_NEAR(dx[i], dx_ref[i], 1e-4 * (1 + std::abs(dx_ref[i]))) << i;
        for (size_t i = 0; i < w.size(); ++i)
          ASSERT_NEAR(dw[i], pass * dw_ref[i], 1e-3 * (1 + std::abs(pass * dw_ref[i]))) << pass << " " << i;
        if (k.bias)
          for (int m = 0; m < k.m; ++m) ASSERT_NEAR(db[m], pass * db_ref[m], 1e-3 * (1 + std::abs(pass * db_ref[m])));
      }
    }
  }
}

// The engine's primitives take an element type: bf16 storage (what mixed precision uses on CPUs with
// AVX-512 BF16 or AMX: bf16 x, y and weights, a float bias) computes the convolution of the
// bf16-rounded values, to bf16's precision.
TEST(ConvolutionEngines, OneDnnRunsOnBf16Storage) {
  SKIP_WITHOUT_ONEDNN();
  const auto to_bf16 = [](float f) {  // round to nearest even
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    return static_cast<uint16_t>((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16);
  };
  const auto from_bf16 = [](uint16_t h) {
    const uint32_t bits = uint32_t{h} << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  };
  std::mt19937 rng(5);
  std::normal_distribution<float> normal;
  for (OneDnnLayout layout : {OneDnnLayout::kPlain, OneDnnLayout::kNative}) {
    const ConvCase& k = kCases[7];
    SCOPED_TRACE(OneDnnLayoutName(layout));
    std::string why;
    const OneDnnConvolutionPtr conv =
        CreateOneDnnConvolution(k.n, k.m, k.group, GeometryOf(k), k.bias, layout, &why, OneDnnDataType::kBFloat16);
    if (!conv) GTEST_SKIP() << "oneDNN has no bf16 convolution on this CPU: " << why;
    const ConvGeometry g = GeometryOf(k);
    const int64_t x_count = int64_t{k.n} * k.c * k.h * k.w, y_count = int64_t{k.n} * k.m * g.out_size();
    std::vector<uint16_t> x(x_count), w(int64_t{k.m} * k.c * k.kh * k.kw), y(y_count);
    for (auto* v : {&x, &w})
      for (uint16_t& e : *v) e = to_bf16(normal(rng));
    std::vector<float> b(k.m);  // the bias stays float (it is the master copy's)
    for (float& e : b) e = normal(rng);
    std::vector<double> y_ref(y_count, 0.0);
    ForEachTerm(k, [&](int64_t xi, int64_t wi, int64_t yi) { y_ref[yi] += double(from_bf16(x[xi])) * from_bf16(w[wi]); });
    std::vector<char> scratch(OneDnnConvolutionScratchBytes(*conv) + 64);
    void* s = scratch.data() + (64 - reinterpret_cast<uintptr_t>(scratch.data()) % 64) % 64;
    OneDnnConvolutionForward(*conv, x.data(), w.data(), b.data(), y.data(), s);
    for (int64_t i = 0; i < y_count; ++i) {
      const double expected = y_ref[i] + b[i / g.out_size() % k.m];
      ASSERT_NEAR(from_bf16(y[i]), expected, 1e-2 * (1 + std::abs(expected))) << i;
    }
  }
}

TEST(ConvolutionEngines, OneDnnGradientCheck) {
  SKIP_WITHOUT_ONEDNN();
  const ConvCase k{2, 4, 5, 5, 4, 3, 3, 1, 1, 2, 2, 1, 1, 2, true};
  LayerFixture f(LayerText(k, "ONEDNN"), {{k.n, k.c, k.h, k.w}});
  f.FillBottoms();
  CheckGradient(f);
}

TEST(ConvolutionEngines, ThePrototxtsEngineThenTheSettingDecide) {
  const ConvCase k{2, 3, 9, 9, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, true};
  ExpectThePrototxtsEngineThenTheSettingDecide([&k](const std::string& engine) { return LayerText(k, engine); },
                                               {k.n, k.c, k.h, k.w}, "im2col", {"im2col", "onednn", "onednn_plain"});
}

TEST(ConvolutionEngines, OneDnnWithoutOneDnnIsAUserError) {
  if (BuiltWithOneDnn()) {
    EXPECT_EQ(ParseCpuEngine("onednn", "--cpu_engine"), CpuEngine::kOneDnn);
  } else {
    EXPECT_THROW(SetCpuEngine(CpuEngine::kOneDnn), Error);
    EXPECT_NE(ErrorOf(LayerText(kCases[0], "ONEDNN"), {2, 1, 8, 8}).find("engine ONEDNN, but this build has no oneDNN"),
              std::string::npos);
  }
  try {
    ParseCpuEngine("fast", "--cpu_engine");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "--cpu_engine: unknown CPU engine 'fast' (valid: auto, im2col, onednn)");
  }
}

}  // namespace cortado::test
