// exp_test.cpp — Exp y = base^(shift + scale·x): hand-computed values and gradients for base e and a
// given base, gradient checks, parameter errors and in-place use.
#include <cmath>

#include "in_place.hpp"

namespace cortado::test {

TEST(Exp, ForwardAndBackwardMatchHandComputedValues) {
  {
    LayerFixture f("type: 'Exp'", {{3}});  // base e
    const float in[] = {0.0f, 1.0f, -1.0f};
    std::copy(in, in + 3, f.bottom(0).data());
    f.Forward();
    for (int i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(f.top(0).data()[i], std::exp(in[i]));
    for (int i = 0; i < 3; ++i) f.top(0).diff()[i] = 2.0f;
    f.Backward();
    for (int i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(f.bottom(0).diff()[i], 2.0f * std::exp(in[i]));
  }
  {
    LayerFixture f("type: 'Exp' exp_param { base: 2 scale: 0.5 shift: 1 }", {{3}});  // 2^(1 + x/2)
    const float in[] = {0.0f, 2.0f, -2.0f};
    std::copy(in, in + 3, f.bottom(0).data());
    f.Forward();
    const float expected[] = {2.0f, 4.0f, 1.0f};
    for (int i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(f.top(0).data()[i], expected[i]);
    for (int i = 0; i < 3; ++i) f.top(0).diff()[i] = 1.0f;
    f.Backward();
    for (int i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(f.bottom(0).diff()[i], std::log(2.0f) * 0.5f * expected[i]);
  }
}

TEST(Exp, GradientCheck) {
  for (const char* text : {"type: 'Exp'", "type: 'Exp' exp_param { base: 2 scale: 0.5 shift: 1 }",
                           "type: 'Exp' exp_param { base: 0.5 scale: -1 shift: 0.3 }",
                           "type: 'Exp' exp_param { shift: -0.5 scale: 0.8 }"}) {
    SCOPED_TRACE(text);
    LayerFixture f(text, {{2, 3, 4}});
    f.FillBottoms();
    CheckGradient(f);
  }
}

TEST(Exp, BadBaseIsAnError) {
  for (const char* base : {"0", "-2", "-0.5"}) {
    const std::string message = ErrorOf(
        [&] { LayerFixture f(std::string("name: 'e' type: 'Exp' exp_param { base: ") + base + " }", {{2}}); });
    EXPECT_NE(message.find("layer e (Exp)"), std::string::npos) << message;
    EXPECT_NE(message.find("base"), std::string::npos) << message;
  }
}

TEST(Exp, InPlaceMatchesOutOfPlace) {
  EXPECT_EQ(InPlaceScratchCount("type: 'Exp'", {3, 4}), 0u);  // Backward reads the top only
  ExpectInPlaceMatchesOutOfPlace("type: 'Exp' exp_param { base: 3 scale: 0.5 shift: -1 }", {3, 4, 5}, -2, 2);
}

}  // namespace cortado::test
