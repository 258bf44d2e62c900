// clip_test.cpp — Clip against hand-computed values (the gradient passes at the bounds themselves, as
// in Caffe), its gradient away from the two kinks, parameter errors, and in-place use (which keeps a
// copy of the input, so clipped elements still get no gradient).
#include <cmath>

#include "in_place.hpp"

namespace cortado::test {

TEST(Clip, ForwardAndBackwardMatchHandComputedValues) {
  LayerFixture f("type: 'Clip' clip_param { min: -1 max: 2 }", {{5}});
  const float in[] = {-3.0f, -1.0f, 0.5f, 2.0f, 5.0f};
  std::copy(in, in + 5, f.bottom(0).data());
  f.Forward();
  const float expected[] = {-1.0f, -1.0f, 0.5f, 2.0f, 2.0f};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(f.top(0).data()[i], expected[i]);
  for (int i = 0; i < 5; ++i) f.top(0).diff()[i] = 3.0f;
  f.Backward();
  const float dx[] = {0.0f, 3.0f, 3.0f, 3.0f, 0.0f};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(f.bottom(0).diff()[i], dx[i]) << in[i];
}

TEST(Clip, GradientCheck) {
  LayerFixture f("type: 'Clip' clip_param { min: -1 max: 0.5 }", {{2, 3, 4, 5}});
  f.FillBottoms(1.5f);
  for (int64_t i = 0; i < f.bottom(0).count(); ++i) {  // keep finite differences off the kinks
    float& x = f.bottom(0).data()[i];
    if (std::fabs(x + 1.0f) < 0.05f || std::fabs(x - 0.5f) < 0.05f) x += 0.1f;
  }
  CheckGradient(f);
}

TEST(Clip, BadParametersAreErrors) {
  const std::string missing = ErrorOf([] { LayerFixture f("name: 'c' type: 'Clip'", {{2}}); });
  EXPECT_NE(missing.find("layer c (Clip)"), std::string::npos) << missing;
  EXPECT_NE(missing.find("min and max"), std::string::npos) << missing;
  const std::string reversed =
      ErrorOf([] { LayerFixture f("name: 'c' type: 'Clip' clip_param { min: 1 max: -1 }", {{2}}); });
  EXPECT_NE(reversed.find("layer c (Clip)"), std::string::npos) << reversed;
  EXPECT_NE(reversed.find("greater than max"), std::string::npos) << reversed;
  EXPECT_NO_THROW(LayerFixture("type: 'Clip' clip_param { min: 1 max: 1 }", {{2}}));
}

TEST(Clip, InPlaceMatchesOutOfPlace) {
  EXPECT_EQ(InPlaceScratchCount("type: 'Clip' clip_param { min: -1 max: 1 }", {3, 4}), 1u);
  ExpectInPlaceMatchesOutOfPlace("type: 'Clip' clip_param { min: -0.5 max: 1 }", {3, 4, 5}, -2, 2);
  const NeuronRun run = RunNeuron("type: 'Clip' clip_param { min: 0 max: 1 }", {3}, {-1.0f, 0.5f, 2.0f},
                                  {1.0f, 1.0f, 1.0f}, true);
  EXPECT_EQ(run.y, (std::vector<float>{0.0f, 0.5f, 1.0f}));
  EXPECT_EQ(run.dx, (std::vector<float>{0.0f, 1.0f, 0.0f}));
}

}  // namespace cortado::test
