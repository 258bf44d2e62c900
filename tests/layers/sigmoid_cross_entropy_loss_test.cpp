// sigmoid_cross_entropy_loss_test.cpp — SigmoidCrossEntropyLoss: loss and gradient by hand, the
// stable form at large scores, every normalization mode, ignore_label, shape errors, gradient checks.
#include <cmath>

#include "cortado/error.hpp"
#include "test_util.hpp"

namespace cortado::test {

namespace {

// Scores and targets (2 × 3): sample 0 then sample 1.
const float kX[] = {0.0f, 2.0f, -1.0f, 3.0f, -0.5f, 1.5f};
const float kT[] = {0.0f, 1.0f, 1.0f, 0.0f, 0.25f, 1.0f};

double Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// −[t log σ(x) + (1 − t) log(1 − σ(x))], computed naively.
double Xent(int i) {
  const double p = Sigmoid(kX[i]);
  return -(kT[i] * std::log(p) + (1 - kT[i]) * std::log(1 - p));
}

float LossOf(const std::string& extra) {
  LayerFixture f("type: 'SigmoidCrossEntropyLoss' " + extra, {{2, 3}, {2, 3}});
  std::copy(kX, kX + 6, f.bottom(0).data());
  std::copy(kT, kT + 6, f.bottom(1).data());
  return f.Forward();
}

}  // namespace

TEST(SigmoidCrossEntropyLoss, ForwardMatchesHandComputedValues) {
  double total = 0;
  for (int i = 0; i < 6; ++i) total += Xent(i);
  EXPECT_NEAR(LossOf(""), total / 6, 1e-6);
  // x = 0, t = 0: log 2; x = 2, t = 1: log(1 + e^−2).
  EXPECT_NEAR(Xent(0), std::log(2.0), 1e-12);
  EXPECT_NEAR(Xent(1), std::log1p(std::exp(-2.0)), 1e-12);
}

TEST(SigmoidCrossEntropyLoss, LargeScoresAreStable) {
  LayerFixture f("type: 'SigmoidCrossEntropyLoss' loss_param { normalization: NONE }", {{1, 4}, {1, 4}});
  const float x[] = {100, -100, 100, -100};
  const float t[] = {0, 1, 1, 0};
  std::copy(x, x + 4, f.bottom(0).data());
  std::copy(t, t + 4, f.bottom(1).data());
  EXPECT_NEAR(f.Forward(), 200.0f, 1e-3f);
  f.Backward();
  const float expected[] = {1, -1, 0, 0};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(f.bottom(0).diff()[i], expected[i], 1e-6f) << i;
}

TEST(SigmoidCrossEntropyLoss, NormalizationModes) {
  double total = 0, kept = 0;
  for (int i = 0; i < 6; ++i) {
    total += Xent(i);
    if (static_cast<int>(kT[i]) != 1) kept += Xent(i);  // ignore_label 1 drops positions 1, 2 and 5
  }
  EXPECT_NEAR(LossOf("loss_param { normalization: VALID }"), total / 6, 1e-6);
  EXPECT_NEAR(LossOf("loss_param { normalization: FULL }"), total / 6, 1e-6);
  EXPECT_NEAR(LossOf("loss_param { normalization: BATCH_SIZE }"), total / 2, 1e-6);
  EXPECT_NEAR(LossOf("loss_param { normalization: NONE }"), total, 1e-5);
  EXPECT_NEAR(LossOf("loss_param { normalize: false }"), total / 2, 1e-6);
  EXPECT_NEAR(LossOf("loss_param { normalize: true }"), total / 6, 1e-6);
  const std::string ig = "loss_param { ignore_label: 1 ";
  EXPECT_NEAR(LossOf(ig + "}"), kept / 3, 1e-6);
  EXPECT_NEAR(LossOf(ig + "normalization: FULL }"), kept / 6, 1e-6);
  EXPECT_NEAR(LossOf(ig + "normalization: BATCH_SIZE }"), kept / 2, 1e-6);
  EXPECT_NEAR(LossOf(ig + "normalization: NONE }"), kept, 1e-5);
}

TEST(SigmoidCrossEntropyLoss, BackwardMatchesHandComputedValues) {
  // Loss weight 3, BATCH_SIZE normalization (2): dx = (σ(x) − t) · 3 / 2.
  LayerFixture f("type: 'SigmoidCrossEntropyLoss' loss_weight: 3 loss_param { normalization: BATCH_SIZE }",
                 {{2, 3}, {2, 3}});
  std::copy(kX, kX + 6, f.bottom(0).data());
  std::copy(kT, kT + 6, f.bottom(1).data());
  for (int i = 0; i < 6; ++i) f.bottom(1).diff()[i] = 42.0f;  // targets never get a gradient
  f.Forward();
  f.Backward();
  for (int i = 0; i < 6; ++i) {
    EXPECT_NEAR(f.bottom(0).diff()[i], (Sigmoid(kX[i]) - kT[i]) * 1.5, 1e-6) << i;
    EXPECT_EQ(f.bottom(1).diff()[i], 42.0f);
  }
}

TEST(SigmoidCrossEntropyLoss, IgnoredTargetsGetNoGradient) {
  LayerFixture f("type: 'SigmoidCrossEntropyLoss' loss_param { ignore_label: -1 }", {{2, 3}, {2, 3}});
  std::copy(kX, kX + 6, f.bottom(0).data());
  std::copy(kT, kT + 6, f.bottom(1).data());
  f.bottom(1).data()[1] = -1;
  f.bottom(1).data()[4] = -1;
  // Four positions remain (VALID): the loss is their mean.
  double kept = 0;
  for (int i : {0, 2, 3, 5}) kept += Xent(i);
  EXPECT_NEAR(f.Forward(), kept / 4, 1e-6);
  f.Backward();
  EXPECT_EQ(f.bottom(0).diff()[1], 0.0f);
  EXPECT_EQ(f.bottom(0).diff()[4], 0.0f);
  EXPECT_NEAR(f.bottom(0).diff()[3], (Sigmoid(3.0) - 0.0) / 4, 1e-6);
}

TEST(SigmoidCrossEntropyLoss, AllIgnoredGivesZeroLoss) {
  LayerFixture f("type: 'SigmoidCrossEntropyLoss' loss_param { ignore_label: 0 }", {{2, 2}, {2, 2}});
  f.FillBottoms();
  for (int i = 0; i < 4; ++i) f.bottom(1).data()[i] = 0;
  EXPECT_EQ(f.Forward(), 0.0f);
  f.Backward();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(f.bottom(0).diff()[i], 0.0f);
}

TEST(SigmoidCrossEntropyLoss, CountMismatchIsAnError) {
  try {
    LayerFixture f("name: 'xent' type: 'SigmoidCrossEntropyLoss'", {{2, 3}, {2, 2}});
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("layer xent (SigmoidCrossEntropyLoss)"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(LayerFixture("type: 'SigmoidCrossEntropyLoss'", {{2, 3, 2}, {2, 6}}));
}

TEST(SigmoidCrossEntropyLoss, GradientCheck) {
  LayerFixture f("type: 'SigmoidCrossEntropyLoss'", {{2, 3, 2}, {2, 3, 2}});
  f.FillBottoms(2.0f);
  FillUniform(&f.bottom(1), f.rng(), 0.0f, 1.0f);
  GradientCheckOptions o;
  o.skip_bottoms = {1};
  CheckGradient(f, o);
}

TEST(SigmoidCrossEntropyLoss, GradientCheckIgnoreLabelAndWeight) {
  LayerFixture f("type: 'SigmoidCrossEntropyLoss' loss_weight: 2 loss_param { ignore_label: 1 }",
                 {{3, 4}, {3, 4}});
  f.FillBottoms(2.0f);
  for (int i = 0; i < 12; ++i) f.bottom(1).data()[i] = i % 3 == 0 ? 1.0f : 0.3f;
  GradientCheckOptions o;
  o.skip_bottoms = {1};
  CheckGradient(f, o);
}

}  // namespace cortado::test
