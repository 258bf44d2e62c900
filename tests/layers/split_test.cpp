// split_test.cpp — Split: every top a copy of the bottom; the bottom's gradient the sum of the tops'.
#include "cortado/error.hpp"
#include "test_util.hpp"

namespace cortado::test {

TEST(Split, ForwardCopiesBackwardSums) {
  LayerFixture f("type: 'Split'", {{2, 2}}, 3);
  const float in[] = {1.0f, -2.0f, 3.5f, 0.25f};
  std::copy(in, in + 4, f.bottom(0).data());
  f.Forward();
  for (int t = 0; t < 3; ++t) {
    ASSERT_EQ(f.top(t).shape(), (std::vector<int>{2, 2}));
    EXPECT_NE(f.top(t).data(), f.bottom(0).data());
    for (int i = 0; i < 4; ++i) EXPECT_EQ(f.top(t).data()[i], in[i]);
  }
  for (int t = 0; t < 3; ++t)
    for (int i = 0; i < 4; ++i) f.top(t).diff()[i] = static_cast<float>((t + 1) * 10 + i);
  f.Backward();
  // dx_i = (10 + i) + (20 + i) + (30 + i)
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(f.bottom(0).diff()[i], 60.0f + 3 * i);
}

TEST(Split, GradientCheck) {
  LayerFixture f("type: 'Split'", {{2, 3, 2}}, 2);
  f.FillBottoms();
  CheckGradient(f);
}

TEST(Split, SingleTopGradientCheck) {
  LayerFixture f("type: 'Split'", {{3, 2}}, 1);
  f.FillBottoms();
  CheckGradient(f);
}

}  // namespace cortado::test
