// multinomial_logistic_loss_test.cpp — MultinomialLogisticLoss: loss and gradient by hand, the 1e-20
// clamp, bad labels (SoftmaxWithLoss's error), shape errors and a gradient check.
#include <cmath>

#include "cortado/error.hpp"
#include "test_util.hpp"

namespace cortado::test {

TEST(MultinomialLogisticLoss, ForwardAndBackwardMatchHandComputedValues) {
  LayerFixture f("type: 'MultinomialLogisticLoss' loss_weight: 2", {{2, 3, 1, 1}, {2, 1, 1, 1}});
  const float p[] = {0.2f, 0.5f, 0.3f, 0.1f, 0.1f, 0.8f};
  std::copy(p, p + 6, f.bottom(0).data());
  f.bottom(1).data()[0] = 1;
  f.bottom(1).data()[1] = 2;
  f.bottom(1).diff()[0] = f.bottom(1).diff()[1] = 42.0f;  // labels never get a gradient
  EXPECT_NEAR(f.Forward(), 2 * -(std::log(0.5) + std::log(0.8)) / 2, 1e-6);
  f.Backward();
  // −2 / (2 · p) at the labels.
  const float expected[] = {0, -1 / 0.5f, 0, 0, 0, -1 / 0.8f};
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(f.bottom(0).diff()[i], expected[i], 1e-5f) << i;
  EXPECT_EQ(f.bottom(1).diff()[0], 42.0f);
}

TEST(MultinomialLogisticLoss, ZeroProbabilityIsClamped) {
  LayerFixture f("type: 'MultinomialLogisticLoss'", {{1, 2}, {1}});
  f.bottom(0).data()[0] = 0.0f;
  f.bottom(0).data()[1] = 1.0f;
  f.bottom(1).data()[0] = 0;
  EXPECT_NEAR(f.Forward(), 46.0517f, 1e-3f);  // −log(1e-20)
  f.Backward();
  EXPECT_NEAR(f.bottom(0).diff()[0], -1e20f, 1e14f);
  EXPECT_EQ(f.bottom(0).diff()[1], 0.0f);
}

TEST(MultinomialLogisticLoss, BadLabelIsSoftmaxWithLossesError) {
  std::string messages[2];
  const char* types[2] = {"MultinomialLogisticLoss", "SoftmaxWithLoss"};
  for (int k = 0; k < 2; ++k) {
    LayerFixture f(std::string("name: 'loss' type: '") + types[k] + "'", {{2, 3}, {2}});
    f.FillBottoms();
    f.bottom(1).data()[0] = 1;
    f.bottom(1).data()[1] = 3;
    try {
      f.Forward();
    } catch (const Error& e) {
      messages[k] = e.what();
    }
  }
  EXPECT_NE(messages[0].find("layer loss (MultinomialLogisticLoss): label 3 (at position 1)"), std::string::npos)
      << messages[0];
  messages[1].replace(messages[1].find(types[1]), 15, types[0]);
  EXPECT_EQ(messages[0], messages[1]);
  LayerFixture f("type: 'MultinomialLogisticLoss'", {{2, 3}, {2}});
  f.FillBottoms();
  f.bottom(1).data()[0] = -1;
  f.bottom(1).data()[1] = 0;
  EXPECT_THROW(f.Forward(), Error);
}

TEST(MultinomialLogisticLoss, LabelCountMismatchIsAnError) {
  EXPECT_THROW(LayerFixture("type: 'MultinomialLogisticLoss'", {{2, 3}, {2, 2}}), Error);
}

TEST(MultinomialLogisticLoss, GradientCheck) {
  LayerFixture f("type: 'MultinomialLogisticLoss' loss_weight: 3", {{4, 5}, {4}});
  FillUniform(&f.bottom(0), f.rng(), 0.2f, 1.0f);
  const float labels[] = {0, 4, 2, 2};
  std::copy(labels, labels + 4, f.bottom(1).data());
  GradientCheckOptions o;
  o.skip_bottoms = {1};
  CheckGradient(f, o);
}

}  // namespace cortado::test
