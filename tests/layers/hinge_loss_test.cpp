// hinge_loss_test.cpp — HingeLoss: L1 and L2 losses and gradients by hand, the label's sign flip,
// bad labels (SoftmaxWithLoss's error), shape errors and gradient checks away from the hinges.
#include "cortado/error.hpp"
#include "test_util.hpp"

namespace cortado::test {

namespace {

// Two samples of three scores; labels 0 and 2.
const float kX[] = {0.5f, -2.0f, 0.2f, 1.0f, 0.3f, -0.4f};
const float kLabels[] = {0, 2};

void Fill(LayerFixture& f) {
  std::copy(kX, kX + 6, f.bottom(0).data());
  std::copy(kLabels, kLabels + 2, f.bottom(1).data());
}

std::string ErrorOf(const std::string& type) {
  LayerFixture f("name: 'loss' type: '" + type + "'", {{2, 3}, {2}});
  f.FillBottoms();
  f.bottom(1).data()[0] = 1;
  f.bottom(1).data()[1] = 3;
  try {
    f.Forward();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(HingeLoss, L1ForwardAndBackwardMatchHandComputedValues) {
  LayerFixture f("type: 'HingeLoss'", {{2, 3}, {2}});
  Fill(f);
  // Sample 0 (label 0): max(0, 1 − 0.5) + max(0, 1 − 2) + max(0, 1.2) = 1.7.
  // Sample 1 (label 2): 2 + 1.3 + max(0, 1 + 0.4) = 4.7.
  EXPECT_NEAR(f.Forward(), (1.7f + 4.7f) / 2, 1e-6f);
  f.Backward();
  const float expected[] = {-0.5f, 0, 0.5f, 0.5f, 0.5f, -0.5f};
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(f.bottom(0).diff()[i], expected[i], 1e-6f) << i;
}

TEST(HingeLoss, L2ForwardAndBackwardMatchHandComputedValues) {
  LayerFixture f("type: 'HingeLoss' loss_weight: 2 hinge_loss_param { norm: L2 }", {{2, 3, 1, 1}, {2}});
  Fill(f);
  for (int i = 0; i < 2; ++i) f.bottom(1).diff()[i] = 42.0f;  // labels never get a gradient
  // (0.25 + 0 + 1.44) + (4 + 1.69 + 1.96), over 2 samples, weight 2.
  EXPECT_NEAR(f.Forward(), 2 * (1.69f + 7.65f) / 2, 1e-5f);
  f.Backward();
  // ±2m · 2 / 2.
  const float expected[] = {-1.0f, 0, 2.4f, 4.0f, 2.6f, -2.8f};
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(f.bottom(0).diff()[i], expected[i], 1e-5f) << i;
  for (int i = 0; i < 2; ++i) EXPECT_EQ(f.bottom(1).diff()[i], 42.0f);
}

TEST(HingeLoss, BadLabelIsSoftmaxWithLossesError) {
  const std::string msg = ErrorOf("HingeLoss");
  EXPECT_NE(msg.find("layer loss (HingeLoss): label 3 (at position 1)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[0, 3)"), std::string::npos) << msg;
  std::string softmax = ErrorOf("SoftmaxWithLoss");
  softmax.replace(softmax.find("SoftmaxWithLoss"), 15, "HingeLoss");
  EXPECT_EQ(msg, softmax);
  LayerFixture f("type: 'HingeLoss'", {{2, 3}, {2}});
  Fill(f);
  f.bottom(1).data()[0] = -1;
  EXPECT_THROW(f.Forward(), Error);
}

TEST(HingeLoss, LabelCountMismatchIsAnError) {
  EXPECT_THROW(LayerFixture("type: 'HingeLoss'", {{2, 3}, {2, 2}}), Error);
  EXPECT_THROW(LayerFixture("type: 'HingeLoss'", {{2, 3}, {3}}), Error);
}

TEST(HingeLoss, GradientCheck) {
  for (const std::string norm : {"L1", "L2"}) {
    SCOPED_TRACE(norm);
    LayerFixture f("type: 'HingeLoss' hinge_loss_param { norm: " + norm + " }", {{3, 4}, {3}});
    // Scores away from the hinges at ±1, on both sides of them.
    const float x[] = {0.3f, -1.6f, 0.7f, 2.0f, -0.2f, 1.5f, -0.5f, 0.1f, 1.8f, -2.2f, 0.6f, -0.8f};
    std::copy(x, x + 12, f.bottom(0).data());
    const float labels[] = {1, 0, 3};
    std::copy(labels, labels + 3, f.bottom(1).data());
    GradientCheckOptions o;
    o.skip_bottoms = {1};
    CheckGradient(f, o);
  }
}

}  // namespace cortado::test
