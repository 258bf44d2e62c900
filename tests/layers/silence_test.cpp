// silence_test.cpp — Silence: no tops, Forward leaves the bottoms alone, Backward zeroes their diffs.
#include "cortado/error.hpp"
#include "test_util.hpp"

namespace cortado::test {

TEST(Silence, ForwardKeepsDataBackwardZeroesDiffs) {
  LayerFixture f("type: 'Silence'", {{2, 3}, {4}}, 0);
  f.FillBottoms();
  const std::vector<float> before(f.bottom(0).data(), f.bottom(0).data() + 6);
  for (Blob* b : f.bottom()) std::fill(b->diff(), b->diff() + b->count(), 5.0f);
  EXPECT_EQ(f.Forward(), 0.0f);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(f.bottom(0).data()[i], before[i]);
  f.Backward();
  for (Blob* b : f.bottom())
    for (int64_t i = 0; i < b->count(); ++i) EXPECT_EQ(b->diff()[i], 0.0f);
}

TEST(Silence, LeavesBottomsThatDoNotPropagate) {
  LayerFixture f("type: 'Silence'", {{2}, {2}}, 0);
  for (Blob* b : f.bottom()) std::fill(b->diff(), b->diff() + 2, 5.0f);
  f.layer().Backward(f.top(), {false, true}, f.bottom());
  EXPECT_EQ(f.bottom(0).diff()[0], 5.0f);
  EXPECT_EQ(f.bottom(1).diff()[0], 0.0f);
}

TEST(Silence, GradientCheck) {
  // With no tops the objective is constant: every bottom gradient must be zero.
  LayerFixture f("type: 'Silence'", {{2, 3}}, 0);
  f.FillBottoms();
  CheckGradient(f);
}

TEST(Silence, TopsAreAnError) {
  EXPECT_THROW(LayerFixture("type: 'Silence'", {{2}}, 1), Error);
}

}  // namespace cortado::test
