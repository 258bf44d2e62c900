// tanh_test.cpp — TanH against hand-computed values, backward by hand, and its gradient.
#include "test_util.hpp"

namespace cortado::test {

TEST(TanH, ForwardMatchesHandComputedValues) {
  LayerFixture f("type: 'TanH'", {{1, 4}});
  const float in[] = {-1.0f, 0.0f, 0.5f, 2.0f};
  std::copy(in, in + 4, f.bottom(0).data());
  f.Forward();
  const float expected[] = {-0.76159416f, 0.0f, 0.46211716f, 0.96402758f};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(f.top(0).data()[i], expected[i], 1e-6f);
}

TEST(TanH, BackwardMatchesHandComputedValues) {
  LayerFixture f("type: 'TanH'", {{2}});
  f.bottom(0).data()[0] = 0.5f;
  f.bottom(0).data()[1] = -2.0f;
  f.Forward();
  f.top(0).diff()[0] = 2.0f;
  f.top(0).diff()[1] = 1.0f;
  f.Backward();
  // 1 − tanh²: 1 − 0.46211716² = 0.78644773, 1 − 0.96402758² = 0.07065082.
  EXPECT_NEAR(f.bottom(0).diff()[0], 2.0f * 0.78644773f, 1e-6f);
  EXPECT_NEAR(f.bottom(0).diff()[1], 0.07065082f, 1e-6f);
}

TEST(TanH, GradientCheck) {
  LayerFixture f("type: 'TanH'", {{2, 3, 4}});
  f.FillBottoms();
  CheckGradient(f);
}

}  // namespace cortado::test
