// absval_test.cpp — AbsVal against hand-computed values (forward and backward), its gradient away
// from the kink at 0, and the refusal to run in place (as in Caffe).
#include "in_place.hpp"

namespace cortado::test {

TEST(AbsVal, ForwardAndBackwardMatchHandComputedValues) {
  LayerFixture f("type: 'AbsVal'", {{1, 4}});
  const float in[] = {-2.0f, -0.5f, 0.0f, 3.0f};
  std::copy(in, in + 4, f.bottom(0).data());
  f.Forward();
  const float expected[] = {2.0f, 0.5f, 0.0f, 3.0f};
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(f.top(0).data()[i], expected[i]);
  const float dy[] = {1.0f, 2.0f, 3.0f, 4.0f};
  std::copy(dy, dy + 4, f.top(0).diff());
  f.Backward();
  const float dx[] = {-1.0f, -2.0f, 0.0f, 4.0f};  // dy · sign(x), sign(0) = 0
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(f.bottom(0).diff()[i], dx[i]);
}

TEST(AbsVal, GradientCheck) {
  LayerFixture f("type: 'AbsVal'", {{2, 3, 4, 5}});
  f.FillBottoms();
  GradientCheckOptions o;
  o.kink = 0.0f;
  o.kink_range = 0.02f;
  CheckGradient(f, o);
}

TEST(AbsVal, InPlaceIsAnError) {
  const std::string message = ErrorOf([] { InPlaceScratchCount("name: 'abs' type: 'AbsVal'", {2, 3}); });
  EXPECT_NE(message.find("layer abs (AbsVal)"), std::string::npos) << message;
  EXPECT_NE(message.find("in place"), std::string::npos) << message;
}

}  // namespace cortado::test
