// euclidean_loss_test.cpp — EuclideanLoss by hand (forward and backward), and gradient checks for
// both bottoms.
#include "cortado/error.hpp"
#include "test_util.hpp"

namespace cortado::test {

TEST(EuclideanLoss, ForwardBackwardMatchHandComputedValues) {
  LayerFixture f("type: 'EuclideanLoss'", {{2, 2}, {2, 2}});
  const float a[] = {1, 2, 3, 4}, b[] = {0, 2, 5, 1};
  std::copy(a, a + 4, f.bottom(0).data());
  std::copy(b, b + 4, f.bottom(1).data());
  // a − b = (1, 0, −2, 3); Σ² = 14; 14 / (2·2) = 3.5.
  EXPECT_FLOAT_EQ(f.Forward(), 3.5f);
  EXPECT_FLOAT_EQ(f.top(0).data()[0], 3.5f);
  f.Backward();
  const float da[] = {0.5f, 0.0f, -1.0f, 1.5f};
  for (int i = 0; i < 4; ++i) {
    EXPECT_FLOAT_EQ(f.bottom(0).diff()[i], da[i]);
    EXPECT_FLOAT_EQ(f.bottom(1).diff()[i], -da[i]);
  }
  EXPECT_TRUE(f.layer().AllowForceBackward(1));
}

TEST(EuclideanLoss, LossWeightScalesLossAndGradient) {
  LayerFixture f("type: 'EuclideanLoss' loss_weight: 3", {{1, 2}, {1, 2}});
  f.bottom(0).data()[0] = 2;
  f.bottom(0).data()[1] = 0;
  f.bottom(1).data()[0] = 0;
  f.bottom(1).data()[1] = 0;
  EXPECT_FLOAT_EQ(f.top(0).diff()[0], 3.0f);
  EXPECT_FLOAT_EQ(f.Forward(), 3 * 2.0f);  // 4 / 2 = 2, weighted
  f.Backward();
  EXPECT_FLOAT_EQ(f.bottom(0).diff()[0], 6.0f);
  EXPECT_FLOAT_EQ(f.bottom(1).diff()[0], -6.0f);
}

TEST(EuclideanLoss, ShapeMismatchIsAnError) {
  EXPECT_THROW(LayerFixture("type: 'EuclideanLoss'", {{2, 3}, {2, 4}}), Error);
  EXPECT_NO_THROW(LayerFixture("type: 'EuclideanLoss'", {{2, 6}, {2, 2, 3}}));
}

TEST(EuclideanLoss, GradientCheck) {
  LayerFixture f("type: 'EuclideanLoss'", {{3, 2, 3}, {3, 2, 3}});
  f.FillBottoms();
  CheckGradient(f);
}

TEST(EuclideanLoss, GradientCheckWithWeight) {
  LayerFixture f("type: 'EuclideanLoss' loss_weight: 0.5", {{2, 5}, {2, 5}});
  f.FillBottoms();
  CheckGradient(f);
}

}  // namespace cortado::test
