// swish_test.cpp — Swish y = x·sigmoid(beta·x) against hand-computed values (forward and backward),
// its gradient for several betas, and in-place use.
#include <cmath>

#include "in_place.hpp"

namespace cortado::test {

TEST(Swish, ForwardAndBackwardMatchHandComputedValues) {
  for (float beta : {1.0f, 2.0f, 0.0f}) {
    SCOPED_TRACE("beta " + std::to_string(beta));
    LayerFixture f("type: 'Swish' swish_param { beta: " + std::to_string(beta) + " }", {{4}});
    const double in[] = {0.0, 1.0, -2.0, 3.5};
    for (int i = 0; i < 4; ++i) f.bottom(0).data()[i] = static_cast<float>(in[i]);
    f.Forward();
    for (int i = 0; i < 4; ++i) f.top(0).diff()[i] = 2.0f;
    f.Backward();
    for (int i = 0; i < 4; ++i) {
      const double s = 1.0 / (1.0 + std::exp(-beta * in[i]));
      EXPECT_NEAR(f.top(0).data()[i], in[i] * s, 1e-6) << in[i];
      // d(x·s)/dx = s + beta·x·s·(1 − s)
      EXPECT_NEAR(f.bottom(0).diff()[i], 2.0 * (s + beta * in[i] * s * (1.0 - s)), 1e-5) << in[i];
    }
  }
}

TEST(Swish, GradientCheck) {
  for (const char* text : {"type: 'Swish'", "type: 'Swish' swish_param { beta: 2.5 }",
                           "type: 'Swish' swish_param { beta: -0.5 }"}) {
    SCOPED_TRACE(text);
    LayerFixture f(text, {{2, 3, 4, 5}});
    f.FillBottoms(2.0f);
    CheckGradient(f);
  }
}

TEST(Swish, InPlaceMatchesOutOfPlace) {
  EXPECT_EQ(InPlaceScratchCount("type: 'Swish'", {3, 4}), 1u);  // the sigmoid, in place or not
  ExpectInPlaceMatchesOutOfPlace("type: 'Swish' swish_param { beta: 1.5 }", {3, 4, 5}, -4, 4);
}

}  // namespace cortado::test
