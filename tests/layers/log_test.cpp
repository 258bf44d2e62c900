// log_test.cpp — Log y = log_base(shift + scale·x): hand-computed values and gradients for base e and
// a given base, gradient checks, parameter errors and in-place use (which keeps a copy of the input).
#include <cmath>

#include "in_place.hpp"

namespace cortado::test {

TEST(Log, ForwardAndBackwardMatchHandComputedValues) {
  {
    LayerFixture f("type: 'Log'", {{3}});  // natural log
    const float in[] = {1.0f, std::exp(1.0f), 0.5f};
    std::copy(in, in + 3, f.bottom(0).data());
    f.Forward();
    const float expected[] = {0.0f, 1.0f, std::log(0.5f)};
    for (int i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(f.top(0).data()[i], expected[i]);
    for (int i = 0; i < 3; ++i) f.top(0).diff()[i] = 2.0f;
    f.Backward();
    for (int i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(f.bottom(0).diff()[i], 2.0f / in[i]);
  }
  {
    LayerFixture f("type: 'Log' log_param { base: 2 scale: 0.5 shift: 1 }", {{3}});  // log2(1 + x/2)
    const float in[] = {2.0f, 6.0f, 0.0f};
    std::copy(in, in + 3, f.bottom(0).data());
    f.Forward();
    const float expected[] = {1.0f, 2.0f, 0.0f};
    for (int i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(f.top(0).data()[i], expected[i]);
    for (int i = 0; i < 3; ++i) f.top(0).diff()[i] = 1.0f;
    f.Backward();
    for (int i = 0; i < 3; ++i)
      EXPECT_FLOAT_EQ(f.bottom(0).diff()[i], 0.5f / (std::log(2.0f) * (1.0f + 0.5f * in[i])));
  }
}

TEST(Log, GradientCheck) {
  struct Case {
    const char* text;
    float lo, hi;
  };
  const Case cases[] = {
      {"type: 'Log'", 0.5f, 2.0f},
      {"type: 'Log' log_param { base: 10 scale: 2 shift: 1 }", 0.0f, 1.0f},
      {"type: 'Log' log_param { base: 0.5 scale: -1 shift: 3 }", -1.0f, 1.0f},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    LayerFixture f(c.text, {{2, 3, 4}});
    FillUniform(&f.bottom(0), f.rng(), c.lo, c.hi);
    CheckGradient(f);
  }
}

TEST(Log, BadBaseIsAnError) {
  for (const char* base : {"1", "0", "-3"}) {
    const std::string message = ErrorOf(
        [&] { LayerFixture f(std::string("name: 'l' type: 'Log' log_param { base: ") + base + " }", {{2}}); });
    EXPECT_NE(message.find("layer l (Log)"), std::string::npos) << message;
    EXPECT_NE(message.find("base"), std::string::npos) << message;
  }
}

TEST(Log, InPlaceMatchesOutOfPlace) {
  EXPECT_EQ(InPlaceScratchCount("type: 'Log'", {3, 4}), 1u);
  ExpectInPlaceMatchesOutOfPlace("type: 'Log' log_param { base: 2 scale: 0.5 shift: 2 }", {3, 4, 5}, -1, 3);
}

}  // namespace cortado::test
