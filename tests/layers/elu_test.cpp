// elu_test.cpp — ELU against hand-computed values (forward and backward), its gradient (smooth at 0
// for alpha 1, a kink there otherwise), and in-place use.
#include <cmath>

#include "in_place.hpp"

namespace cortado::test {

TEST(ELU, ForwardAndBackwardMatchHandComputedValues) {
  LayerFixture f("type: 'ELU' elu_param { alpha: 0.5 }", {{4}});
  const float in[] = {-2.0f, -0.5f, 0.0f, 3.0f};
  std::copy(in, in + 4, f.bottom(0).data());
  f.Forward();
  const float expected[] = {0.5f * (std::exp(-2.0f) - 1.0f), 0.5f * (std::exp(-0.5f) - 1.0f), 0.0f, 3.0f};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(f.top(0).data()[i], expected[i], 1e-7f) << in[i];
  for (int i = 0; i < 4; ++i) f.top(0).diff()[i] = 2.0f;
  f.Backward();
  // x ≤ 0: dy · (alpha + y) = dy · alpha · e^x; x > 0: dy.
  const float dx[] = {2.0f * 0.5f * std::exp(-2.0f), 2.0f * 0.5f * std::exp(-0.5f), 1.0f, 2.0f};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(f.bottom(0).diff()[i], dx[i], 1e-6f) << in[i];
}

TEST(ELU, GradientCheck) {
  {
    LayerFixture f("type: 'ELU'", {{2, 3, 4, 5}});  // alpha 1: continuous derivative at 0
    f.FillBottoms();
    CheckGradient(f);
  }
  {
    LayerFixture f("type: 'ELU' elu_param { alpha: 0.3 }", {{2, 3, 4, 5}});
    f.FillBottoms();
    GradientCheckOptions o;
    o.kink_range = 0.02f;
    CheckGradient(f, o);
  }
}

TEST(ELU, InPlaceMatchesOutOfPlace) {
  EXPECT_EQ(InPlaceScratchCount("type: 'ELU'", {3, 4}), 0u);
  ExpectInPlaceMatchesOutOfPlace("type: 'ELU' elu_param { alpha: 0.7 }", {3, 4, 5}, -3, 3);
}

}  // namespace cortado::test
