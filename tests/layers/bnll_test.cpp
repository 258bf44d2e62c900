// bnll_test.cpp — BNLL (softplus) against values computed in double, including inputs far from 0 in
// both directions, its gradient, and in-place use (which keeps a copy of the input for Backward).
#include <cmath>

#include "in_place.hpp"

namespace cortado::test {

TEST(BNLL, ForwardAndBackwardMatchHandComputedValues) {
  LayerFixture f("type: 'BNLL'", {{6}});
  const double in[] = {-20.0, -1.0, 0.0, 1.0, 30.0, 100.0};
  for (int i = 0; i < 6; ++i) f.bottom(0).data()[i] = static_cast<float>(in[i]);
  f.Forward();
  for (int i = 0; i < 6; ++i) {
    const double expected = std::log1p(std::exp(-std::fabs(in[i]))) + std::max(in[i], 0.0);
    EXPECT_FLOAT_EQ(f.top(0).data()[i], static_cast<float>(expected)) << in[i];
  }
  for (int i = 0; i < 6; ++i) f.top(0).diff()[i] = 2.0f;
  f.Backward();
  for (int i = 0; i < 6; ++i) {
    const double sigmoid = 1.0 / (1.0 + std::exp(-in[i]));
    EXPECT_FLOAT_EQ(f.bottom(0).diff()[i], static_cast<float>(2.0 * sigmoid)) << in[i];
  }
}

TEST(BNLL, GradientCheck) {
  LayerFixture f("type: 'BNLL'", {{2, 3, 4, 5}});
  f.FillBottoms(2.0f);
  CheckGradient(f);
}

TEST(BNLL, InPlaceMatchesOutOfPlace) {
  EXPECT_EQ(InPlaceScratchCount("type: 'BNLL'", {3, 4}), 1u);
  LayerFixture apart("type: 'BNLL'", {{3, 4}});
  EXPECT_TRUE(apart.layer().scratch_buffers().empty());
  ExpectInPlaceMatchesOutOfPlace("type: 'BNLL'", {3, 4, 5}, -4.0f, 4.0f);
}

}  // namespace cortado::test
