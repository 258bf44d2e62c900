// batch_reindex_test.cpp — BatchReindex: picked rows by hand (repeats, truncated non-integers), the
// backward pass adding up repeated picks and zeroing rows never picked, bad indices and shapes as
// one-line errors, the refused gradient of the indices, and a gradient check.
#include <cmath>

#include "cortado/error.hpp"
#include "index_gradient.hpp"
#include "test_util.hpp"

namespace cortado::test {

TEST(BatchReindex, ForwardAndBackwardMatchHandComputedValues) {
  LayerFixture f("type: 'BatchReindex'", {{4, 1, 2}, {5}});
  ASSERT_EQ(f.top(0).shape(), (std::vector<int>{5, 1, 2}));
  for (int i = 0; i < 8; ++i) f.bottom(0).data()[i] = static_cast<float>(i);
  const float idx[] = {2, 0, 2.7f, 1, 2};  // 2.7 reads as 2, as in Caffe
  std::copy(idx, idx + 5, f.bottom(1).data());
  f.Forward();
  const float y[] = {4, 5, 0, 1, 4, 5, 2, 3, 4, 5};
  for (int i = 0; i < 10; ++i) EXPECT_EQ(f.top(0).data()[i], y[i]) << i;

  for (int i = 0; i < 10; ++i) f.top(0).diff()[i] = 1.0f + i;
  for (int i = 0; i < 8; ++i) f.bottom(0).diff()[i] = 42.0f;
  f.layer().Backward(f.top(), {true, false}, f.bottom());
  // Row 0 ← top 1; row 1 ← top 3; row 2 ← tops 0, 2, 4; row 3 never picked.
  const float dx[] = {3, 4, 7, 8, 1 + 5 + 9, 2 + 6 + 10, 0, 0};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(f.bottom(0).diff()[i], dx[i]) << i;
}

TEST(BatchReindex, BadIndexIsAnErrorNamingTheLayer) {
  for (float bad : {3.0f, -1.0f, -0.5f, std::nanf("")}) {
    LayerFixture f("name: 'r' type: 'BatchReindex'", {{3, 2}, {3}});
    f.FillBottoms();
    const float idx[] = {0, 2, bad};
    std::copy(idx, idx + 3, f.bottom(1).data());
    const std::string message = ErrorOf([&] { f.Forward(); });
    EXPECT_NE(message.find("layer r (BatchReindex): index "), std::string::npos) << message;
    EXPECT_NE(message.find(" (at position 2) is outside [0, 3), the items of bottom 0"), std::string::npos) << message;
  }
}

TEST(BatchReindex, ShapeErrorsAndRefusedIndexGradient) {
  EXPECT_NE(ErrorOf([] { LayerFixture("name: 'r' type: 'BatchReindex'", {{3, 2}, {3, 1}}); })
                .find("layer r (BatchReindex): the indices (bottom 1) must be 1-D"),
            std::string::npos);
  LayerFixture f("name: 'r' type: 'BatchReindex'", {{3, 2}, {2}});
  f.FillBottoms();
  f.bottom(1).data()[0] = 1;
  f.bottom(1).data()[1] = 0;
  f.Forward();
  EXPECT_NE(ErrorOf([&] { f.Backward(); }).find("layer r (BatchReindex): cannot backpropagate to the indices"),
            std::string::npos);
  EXPECT_FALSE(f.layer().AllowForceBackward(1));
}

TEST(BatchReindex, GradientCheck) {
  LayerFixture f("type: 'BatchReindex'", {{3, 2, 2}, {6}});
  f.FillBottoms();
  const float idx[] = {2, 2, 0, 1, 2, 0};
  std::copy(idx, idx + 6, f.bottom(1).data());
  CheckGradientWithoutIndices(f, {1});
}

}  // namespace cortado::test
