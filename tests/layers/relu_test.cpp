// relu_test.cpp — ReLU against hand-computed values, and its gradient away from the kink at 0.
#include "test_util.hpp"

namespace cortado::test {

TEST(ReLU, ForwardMatchesHandComputedValues) {
  LayerFixture f("type: 'ReLU' relu_param { negative_slope: 0.5 }", {{1, 4}});
  const float in[] = {-2.0f, -0.5f, 0.0f, 3.0f};
  std::copy(in, in + 4, f.bottom(0).data());
  f.Forward();
  const float expected[] = {-1.0f, -0.25f, 0.0f, 3.0f};
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(f.top(0).data()[i], expected[i]);
}

TEST(ReLU, GradientCheck) {
  LayerFixture f("type: 'ReLU'", {{2, 3, 4, 5}});
  f.FillBottoms();
  GradientCheckOptions o;
  o.kink = 0.0f;
  o.kink_range = 0.02f;
  CheckGradient(f, o);
}

TEST(ReLU, LeakyGradientCheck) {
  LayerFixture f("type: 'ReLU' relu_param { negative_slope: 0.1 }", {{2, 3, 4, 5}});
  f.FillBottoms();
  GradientCheckOptions o;
  o.kink_range = 0.02f;
  CheckGradient(f, o);
}

}  // namespace cortado::test
