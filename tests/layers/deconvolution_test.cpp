// deconvolution_test.cpp — Deconvolution: output and weight shapes in every parameter form, a
// hand-worked stride-2 case (forward and backward), the adjoint identity with Convolution
// (<conv(x), y> = <x, deconv(y)> with the same weights) over pad / stride / dilation / group /
// rectangular kernels, several bottoms, finite-difference gradients with group and bias, and the
// user errors.
#include <cmath>
#include <sstream>

#include "cortado/error.hpp"
#include "test_util.hpp"

namespace cortado::test {
namespace {

std::string Deconv(const std::string& param) {
  return "type: 'Deconvolution' convolution_param { " + param +
         " weight_filler { type: 'gaussian' std: 0.5 } bias_filler { type: 'gaussian' std: 0.5 } }";
}

std::vector<int> TopShape(const std::string& param, const std::vector<int>& bottom) {
  LayerFixture f(Deconv(param), {bottom});
  return f.top(0).shape();
}

double Dot(const Blob& a, const Blob& b) {
  double sum = 0;
  for (int64_t i = 0; i < a.count(); ++i) sum += double(a.data()[i]) * b.data()[i];
  return sum;
}

}  // namespace

TEST(Deconvolution, Shapes) {
  // stride·(in − 1) + dilation·(kernel − 1) + 1 − 2·pad
  EXPECT_EQ(TopShape("num_output: 3 kernel_size: 3 stride: 2", {2, 4, 5, 6}), (std::vector<int>{2, 3, 11, 13}));
  EXPECT_EQ(TopShape("num_output: 2 kernel_size: 4 stride: 2 pad: 1", {1, 1, 8, 8}), (std::vector<int>{1, 2, 16, 16}));
  EXPECT_EQ(TopShape("num_output: 2 kernel_h: 3 kernel_w: 1 stride_h: 2 stride_w: 3 pad_h: 1 pad_w: 0", {1, 2, 4, 5}),
            (std::vector<int>{1, 2, 7, 13}));
  EXPECT_EQ(TopShape("num_output: 1 kernel_size: 3 dilation: 2", {1, 1, 4, 4}), (std::vector<int>{1, 1, 8, 8}));
  EXPECT_EQ(TopShape("num_output: 1 kernel_size: 3 kernel_size: 2 stride: 1 stride: 2 pad: 1 pad: 0", {1, 1, 4, 4}),
            (std::vector<int>{1, 1, 4, 8}));
  // Weights (input channels, num_output / group, kh, kw), bias (num_output).
  LayerFixture f(Deconv("num_output: 6 group: 2 kernel_h: 3 kernel_w: 2"), {{1, 4, 3, 3}});
  EXPECT_EQ(f.layer().blobs()[0]->shape(), (std::vector<int>{4, 3, 3, 2}));
  EXPECT_EQ(f.layer().blobs()[1]->shape(), (std::vector<int>{6}));
  LayerFixture g(Deconv("num_output: 2 kernel_size: 2 bias_term: false"), {{1, 1, 3, 3}});
  EXPECT_EQ(g.layer().blobs().size(), 1u);
}

TEST(Deconvolution, HandWorkedStrideTwoCase) {
  // x = [1 2; 3 4], kernel 3×3 = 1..9, stride 2 → 5×5: each input pixel stamps x·W at (2·oh, 2·ow),
  // overlapping on row and column 2. Bias 0.5.
  LayerFixture f("type: 'Deconvolution' convolution_param { num_output: 1 kernel_size: 3 stride: 2 "
                 "bias_filler { type: 'constant' value: 0.5 } }",
                 {{1, 1, 2, 2}});
  ASSERT_EQ(f.top(0).shape(), (std::vector<int>{1, 1, 5, 5}));
  for (int i = 0; i < 4; ++i) f.bottom(0).data()[i] = i + 1.0f;
  for (int i = 0; i < 9; ++i) f.layer().blobs()[0]->data()[i] = i + 1.0f;
  f.Forward();
  const float expected[25] = {1,  2,  5,  4,  6,    // W row 0 ·1 | ·2
                              4,  5,  14, 10, 12,   // W row 1 ·1 | ·2
                              10, 14, 36, 24, 30,   // W row 2 ·1|·2 + W row 0 ·3|·4
                              12, 15, 34, 20, 24,   // W row 1 ·3 | ·4
                              21, 24, 55, 32, 36};  // W row 2 ·3 | ·4
  for (int i = 0; i < 25; ++i) EXPECT_FLOAT_EQ(f.top(0).data()[i], expected[i] + 0.5f) << i;
  // dy = 1: each input's gradient sums the whole kernel (45); each tap sees every input once (10).
  for (int i = 0; i < 25; ++i) f.top(0).diff()[i] = 1.0f;
  f.Backward();
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(f.bottom(0).diff()[i], 45.0f);
  for (int i = 0; i < 9; ++i) EXPECT_FLOAT_EQ(f.layer().blobs()[0]->diff()[i], 10.0f);
  EXPECT_FLOAT_EQ(f.layer().blobs()[1]->diff()[0], 25.0f);
  // A non-uniform dy: x(0,0)'s gradient is Σ W[i][j]·dy[i][j] over its 3×3 footprint.
  for (int i = 0; i < 25; ++i) f.top(0).diff()[i] = static_cast<float>(i);
  f.Backward();
  float d00 = 0;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) d00 += (i * 3 + j + 1.0f) * (i * 5 + j);
  EXPECT_FLOAT_EQ(f.bottom(0).diff()[0], d00);
}

TEST(Deconvolution, IsTheAdjointOfConvolution) {
  struct Case {
    int n, c, h, w, m;  // conv: c channels → m outputs; deconv: m → c
    std::string geometry;
    int group;
  };
  // Sizes where (h + 2·pad − extent) is a multiple of the stride, so deconv(conv's output) is h × w.
  const Case cases[] = {
      {2, 1, 5, 5, 1, "kernel_size: 3 stride: 2", 1},
      {2, 3, 7, 9, 4, "kernel_size: 3 stride: 2 pad: 1", 1},
      {1, 4, 9, 9, 6, "kernel_h: 3 kernel_w: 2 pad_h: 2 pad_w: 1 stride_h: 1 stride_w: 3 dilation: 2 dilation: 1", 2},
      {2, 6, 6, 6, 3, "kernel_size: 1 stride: 1", 3},
      {1, 4, 11, 7, 4, "kernel_size: 3 stride: 2 pad: 1 dilation: 2", 4},
  };
  for (const Case& k : cases) {
    std::ostringstream param;
    param << k.geometry << " group: " << k.group << " bias_term: false";
    SCOPED_TRACE(param.str());
    LayerFixture conv("type: 'Convolution' convolution_param { num_output: " + std::to_string(k.m) + " " + param.str() +
                          " weight_filler { type: 'gaussian' } }",
                      {{k.n, k.c, k.h, k.w}});
    const std::vector<int> y_shape = conv.top(0).shape();
    LayerFixture deconv("type: 'Deconvolution' convolution_param { num_output: " + std::to_string(k.c) + " " +
                            param.str() + " }",
                        {y_shape});
    ASSERT_EQ(deconv.top(0).shape(), (std::vector<int>{k.n, k.c, k.h, k.w}));
    const Blob& w = *conv.layer().blobs()[0];
    ASSERT_EQ(deconv.layer().blobs()[0]->shape(), w.shape());
    std::copy(w.data(), w.data() + w.count(), deconv.layer().blobs()[0]->data());
    conv.FillBottoms();
    deconv.FillBottoms();
    conv.Forward();
    deconv.Forward();
    // <conv(x), y> = <x, deconv(y)>
    const double lhs = Dot(conv.top(0), deconv.bottom(0)), rhs = Dot(conv.bottom(0), deconv.top(0));
    EXPECT_NEAR(lhs, rhs, 1e-4 * (1 + std::abs(lhs)));
    // Backward of deconv is conv: dx = conv(dy) for dy = conv's input.
    std::copy(conv.bottom(0).data(), conv.bottom(0).data() + conv.bottom(0).count(), deconv.top(0).diff());
    deconv.Backward();
    for (int64_t i = 0; i < conv.top(0).count(); ++i)
      ASSERT_NEAR(deconv.bottom(0).diff()[i], conv.top(0).data()[i], 1e-4 * (1 + std::abs(conv.top(0).data()[i]))) << i;
  }
}

TEST(Deconvolution, SeveralBottomsShareTheWeights) {
  LayerFixture f(Deconv("num_output: 2 kernel_size: 3 stride: 2 pad: 1"), {{2, 3, 3, 4}, {2, 3, 3, 4}}, 2);
  f.FillBottoms();
  std::copy(f.bottom(0).data(), f.bottom(0).data() + f.bottom(0).count(), f.bottom(1).data());
  f.Forward();
  for (int64_t i = 0; i < f.top(0).count(); ++i) EXPECT_EQ(f.top(0).data()[i], f.top(1).data()[i]);
  f.FillBottoms();
  CheckGradient(f);
}

TEST(Deconvolution, GradientCheckWithGroupAndBias) {
  LayerFixture f(Deconv("num_output: 4 group: 2 kernel_size: 3 stride: 2 pad: 1"), {{2, 4, 3, 3}});
  f.FillBottoms();
  CheckGradient(f);
}

TEST(Deconvolution, DilatedRectangularGradientCheck) {
  LayerFixture f(Deconv("num_output: 3 kernel_h: 2 kernel_w: 3 stride_h: 1 stride_w: 2 pad_h: 1 pad_w: 0 "
                        "dilation: 2 bias_term: false"),
                 {{2, 2, 3, 4}});
  f.FillBottoms();
  CheckGradient(f);
}

TEST(Deconvolution, FrozenWeightsGetNoGradient) {
  LayerFixture f(Deconv("num_output: 2 kernel_size: 2 stride: 2"), {{1, 3, 2, 2}});
  f.layer().set_param_propagate_down(0, false);
  f.layer().set_param_propagate_down(1, false);
  f.FillBottoms();
  f.Forward();
  for (int64_t i = 0; i < f.top(0).count(); ++i) f.top(0).diff()[i] = 1.0f;
  f.Backward();
  for (auto& p : f.layer().blobs())
    for (int64_t i = 0; i < p->count(); ++i) EXPECT_EQ(p->diff()[i], 0.0f);
  float sum = 0;
  for (int64_t i = 0; i < f.bottom(0).count(); ++i) sum += std::abs(f.bottom(0).diff()[i]);
  EXPECT_GT(sum, 0.0f);
}

namespace {
std::string ErrorOf(const std::string& param, const std::vector<int>& shape) {
  try {
    LayerFixture f("name: 'up3' type: 'Deconvolution' convolution_param { " + param + " }", {shape});
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST(Deconvolution, UserErrors) {
  const std::string group = ErrorOf("num_output: 3 kernel_size: 2 group: 2", {1, 4, 3, 3});
  EXPECT_NE(group.find("up3"), std::string::npos) << group;
  EXPECT_NE(group.find("num_output 3 is not divisible by group 2"), std::string::npos) << group;
  EXPECT_NE(ErrorOf("num_output: 2 kernel_size: 2 group: 2", {1, 3, 3, 3}).find("3 channels are not divisible"),
            std::string::npos);
  const std::string nd = ErrorOf("num_output: 1 kernel_size: 2", {1, 1, 3, 3, 3});
  EXPECT_NE(nd.find("only 2-D deconvolution is supported"), std::string::npos) << nd;
  // 1·(1 − 1) + 1 − 2·1 = −1
  const std::string small = ErrorOf("num_output: 1 kernel_size: 1 pad: 1", {1, 1, 1, 1});
  EXPECT_NE(small.find("output height"), std::string::npos) << small;
  EXPECT_NE(small.find("is not positive"), std::string::npos) << small;
  EXPECT_NE(ErrorOf("num_output: 1", {1, 1, 3, 3}).find("kernel_size"), std::string::npos);
  EXPECT_NE(ErrorOf("kernel_size: 2", {1, 1, 3, 3}).find("num_output must be positive"), std::string::npos);
  EXPECT_NE(ErrorOf("num_output: 1 kernel_size: 2 stride: 0", {1, 1, 3, 3}).find("stride must be positive"),
            std::string::npos);
  EXPECT_NE(ErrorOf("num_output: 1 kernel_h: 2", {1, 1, 3, 3}).find("both kernel_h and kernel_w"), std::string::npos);
}

}  // namespace cortado::test
