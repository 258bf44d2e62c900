// power_test.cpp — Power y = (shift + scale·x)^power: hand-computed values and gradients, the
// constant cases (power 0, scale 0) and power 1, a zero base with power 3 (gradient 0, not NaN),
// gradient checks over several settings, and in-place use.
#include <cmath>

#include "in_place.hpp"

namespace cortado::test {

namespace {

// Forward on x, then Backward with top diff 1: returns {y..., dx...}.
std::vector<float> RunOnes(const std::string& text, const std::vector<float>& x) {
  const int n = static_cast<int>(x.size());
  LayerFixture f(text, {{n}});
  std::copy(x.begin(), x.end(), f.bottom(0).data());
  f.Forward();
  std::vector<float> out(f.top(0).data(), f.top(0).data() + n);
  for (int i = 0; i < n; ++i) f.top(0).diff()[i] = 1.0f;
  f.Backward();
  out.insert(out.end(), f.bottom(0).diff(), f.bottom(0).diff() + n);
  return out;
}

void ExpectValues(const std::vector<float>& actual, const std::vector<float>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_FLOAT_EQ(actual[i], expected[i]) << "element " << i;
}

}  // namespace

TEST(Power, ForwardAndBackwardMatchHandComputedValues) {
  // u = 1 + 3x = {−2, 1, 2.5, 7}; y = u²; dx = 2·3·u.
  ExpectValues(RunOnes("type: 'Power' power_param { power: 2 scale: 3 shift: 1 }", {-1.0f, 0.0f, 0.5f, 2.0f}),
               {4.0f, 1.0f, 6.25f, 49.0f, -12.0f, 6.0f, 15.0f, 42.0f});
  // Power 1 is scale and shift: y = 2x − 1, dx = 2.
  ExpectValues(RunOnes("type: 'Power' power_param { scale: 2 shift: -1 }", {-1.0f, 0.0f, 3.0f}),
               {-3.0f, -1.0f, 5.0f, 2.0f, 2.0f, 2.0f});
  // The default is the identity.
  ExpectValues(RunOnes("type: 'Power'", {-1.5f, 2.0f}), {-1.5f, 2.0f, 1.0f, 1.0f});
  // Square root of 4 + x: y = {2, 3}, dx = 0.5 / y.
  ExpectValues(RunOnes("type: 'Power' power_param { power: 0.5 shift: 4 }", {0.0f, 5.0f}),
               {2.0f, 3.0f, 0.25f, 1.0f / 6.0f});
}

TEST(Power, ConstantCasesHaveZeroGradient) {
  ExpectValues(RunOnes("type: 'Power' power_param { power: 0 scale: 2 shift: 3 }", {-1.0f, 4.0f}),
               {1.0f, 1.0f, 0.0f, 0.0f});
  ExpectValues(RunOnes("type: 'Power' power_param { power: 3 scale: 0 shift: 2 }", {-1.0f, 4.0f}),
               {8.0f, 8.0f, 0.0f, 0.0f});
}

TEST(Power, ZeroBaseGivesAFiniteGradient) {
  // x = 0, shift 0, power 3: dy/dx = 3·u² = 0 (Caffe's y / x form gives NaN here).
  ExpectValues(RunOnes("type: 'Power' power_param { power: 3 scale: 2 }", {0.0f, 1.0f}),
               {0.0f, 8.0f, 0.0f, 24.0f});
}

TEST(Power, GradientCheck) {
  struct Case {
    const char* text;
    float lo, hi;
  };
  const Case cases[] = {
      {"type: 'Power' power_param { power: 2 scale: 0.5 shift: -1 }", -2.0f, 2.0f},
      {"type: 'Power' power_param { power: 3 scale: 0.83 }", -2.0f, 2.0f},
      {"type: 'Power' power_param { power: 0.37 scale: 0.83 shift: 2.4 }", -1.0f, 1.0f},
      {"type: 'Power' power_param { power: -1.5 shift: 3 }", -1.0f, 1.0f},
      {"type: 'Power' power_param { scale: -0.7 shift: 0.2 }", -2.0f, 2.0f},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    LayerFixture f(c.text, {{2, 3, 4}});
    FillUniform(&f.bottom(0), f.rng(), c.lo, c.hi);
    CheckGradient(f);
  }
}

TEST(Power, InPlaceMatchesOutOfPlace) {
  EXPECT_EQ(InPlaceScratchCount("type: 'Power' power_param { power: 2 }", {3, 4}), 1u);
  EXPECT_EQ(InPlaceScratchCount("type: 'Power' power_param { scale: 2 shift: 1 }", {3, 4}), 0u);
  EXPECT_EQ(InPlaceScratchCount("type: 'Power' power_param { power: 0 }", {3, 4}), 0u);
  ExpectInPlaceMatchesOutOfPlace("type: 'Power' power_param { power: 2 scale: 0.5 shift: 1 }", {3, 4, 5}, -2, 2);
  ExpectInPlaceMatchesOutOfPlace("type: 'Power' power_param { power: 0.5 shift: 2 }", {3, 4, 5}, -1, 1);
  ExpectInPlaceMatchesOutOfPlace("type: 'Power' power_param { scale: 3 shift: -1 }", {3, 4, 5}, -2, 2);
  ExpectInPlaceMatchesOutOfPlace("type: 'Power' power_param { power: 0 }", {3, 4, 5}, -2, 2);
}

}  // namespace cortado::test
