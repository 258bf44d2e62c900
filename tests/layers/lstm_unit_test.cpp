// lstm_unit_test.cpp — LSTMUnit against hand-computed values (forward and backward, a stream with
// cont = 0 forgets c_prev), its gradient with binary cont, and Caffe's shape conditions.
#include "cortado/error.hpp"
#include "test_util.hpp"

namespace cortado::test {

namespace {

const char* kUnit = "name: 'unit' type: 'LSTMUnit'";

// Two streams, D = 1: c_prev = (0.5, −1), gate inputs [i' f' o' g'] per stream, cont = (1, 0).
void FillHandExample(LayerFixture& f) {
  const float c_prev[] = {0.5f, -1.0f};
  const float x[] = {0.2f, -0.3f, 0.4f, 0.1f, 1.0f, 2.0f, -1.0f, -0.5f};
  const float cont[] = {1.0f, 0.0f};
  std::copy(c_prev, c_prev + 2, f.bottom(0).data());
  std::copy(x, x + 8, f.bottom(1).data());
  std::copy(cont, cont + 2, f.bottom(2).data());
}

}  // namespace

TEST(LSTMUnit, ForwardMatchesHandComputedValues) {
  LayerFixture f(kUnit, {{1, 2, 1}, {1, 2, 4}, {1, 2}}, 2);
  FillHandExample(f);
  f.Forward();
  ASSERT_EQ(f.top(0).shape(), (std::vector<int>{1, 2, 1}));
  ASSERT_EQ(f.top(1).shape(), (std::vector<int>{1, 2, 1}));
  // Stream 0: i = σ(0.2), f = σ(−0.3), o = σ(0.4), g = tanh(0.1); c = f·0.5 + i·g, h = o·tanh(c).
  EXPECT_NEAR(f.top(0).data()[0], 0.26757959f, 1e-6f);
  EXPECT_NEAR(f.top(1).data()[0], 0.15647972f, 1e-6f);
  // Stream 1 has cont = 0: c = σ(1)·tanh(−0.5), c_prev forgotten.
  EXPECT_NEAR(f.top(0).data()[1], -0.33783471f, 1e-6f);
  EXPECT_NEAR(f.top(1).data()[1], -0.08755198f, 1e-6f);
}

TEST(LSTMUnit, BackwardMatchesHandComputedValues) {
  LayerFixture f(kUnit, {{1, 2, 1}, {1, 2, 4}, {1, 2}}, 2);
  FillHandExample(f);
  f.Forward();
  for (int n = 0; n < 2; ++n) {
    f.top(0).diff()[n] = 0.3f;   // dc
    f.top(1).diff()[n] = -0.7f;  // dh
  }
  f.Backward();
  EXPECT_NEAR(f.bottom(0).diff()[0], -0.03849246f, 1e-6f);
  EXPECT_NEAR(f.bottom(0).diff()[1], 0.0f, 1e-6f);  // cont = 0: nothing flows to c_prev
  const float dx[] = {-0.00223140f, -0.01105585f, -0.04395807f, -0.04923947f,
                      -0.01196527f, 0.0f,         0.04480394f,  0.07571512f};
  for (int i = 0; i < 8; ++i) EXPECT_NEAR(f.bottom(1).diff()[i], dx[i], 1e-6f) << "x diff " << i;
}

TEST(LSTMUnit, GradientCheck) {
  LayerFixture f(kUnit, {{1, 3, 4}, {1, 3, 16}, {1, 3}}, 2);
  f.FillBottoms();
  const float cont[] = {1.0f, 0.0f, 1.0f};
  std::copy(cont, cont + 3, f.bottom(2).data());
  GradientCheckOptions o;
  o.skip_bottoms = {2};  // no gradient reaches cont
  CheckGradient(f, o);
}

TEST(LSTMUnit, ContIsNotBackpropagated) {
  LayerFixture probe(kUnit, {{1, 2, 3}, {1, 2, 12}, {1, 2}}, 2);
  EXPECT_FALSE(probe.layer().AllowForceBackward(2));
  EXPECT_TRUE(probe.layer().AllowForceBackward(0));
  EXPECT_TRUE(probe.layer().AllowForceBackward(1));
}

TEST(LSTMUnit, ShapeErrorsNameTheLayer) {
  const std::string x_width = ErrorOf([] { LayerFixture f(kUnit, {{1, 2, 3}, {1, 2, 11}, {1, 2}}, 2); });
  EXPECT_NE(x_width.find("layer unit (LSTMUnit)"), std::string::npos) << x_width;
  EXPECT_NE(x_width.find("4·D = 12"), std::string::npos) << x_width;
  const std::string cont_axes = ErrorOf([] { LayerFixture f(kUnit, {{1, 2, 3}, {1, 2, 12}, {1, 2, 1}}, 2); });
  EXPECT_NE(cont_axes.find("bottom[2] (cont)"), std::string::npos) << cont_axes;
  const std::string steps = ErrorOf([] { LayerFixture f(kUnit, {{2, 2, 3}, {2, 2, 12}, {2, 2}}, 2); });
  EXPECT_NE(steps.find("bottom[0] (c_prev)"), std::string::npos) << steps;
  const std::string streams = ErrorOf([] { LayerFixture f(kUnit, {{1, 2, 3}, {1, 3, 12}, {1, 2}}, 2); });
  EXPECT_NE(streams.find("bottom[1] (x)"), std::string::npos) << streams;
  const std::string tops = ErrorOf([] { LayerFixture f(kUnit, {{1, 2, 3}, {1, 2, 12}, {1, 2}}, 1); });
  EXPECT_NE(tops.find("layer unit (LSTMUnit)"), std::string::npos) << tops;
}

}  // namespace cortado::test
