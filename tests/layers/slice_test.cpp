// slice_test.cpp — Slice with explicit points and equal parts, along axes 0 and 1, its gradient, and
// bad slice points.
#include "cortado/error.hpp"
#include "test_util.hpp"

namespace cortado::test {

namespace {
void Iota(Blob& b) {
  for (int64_t i = 0; i < b.count(); ++i) b.data()[i] = static_cast<float>(i);
}
}  // namespace

TEST(Slice, ForwardAtSlicePoints) {
  // bottom 2×4: {0 1 2 3 | 4 5 6 7}, cut along axis 1 at 1 and 3.
  LayerFixture f("type: 'Slice' slice_param { slice_point: 1 slice_point: 3 }", {{2, 4}}, 3);
  Iota(f.bottom(0));
  f.Forward();
  ASSERT_EQ(f.top(0).shape(), (std::vector<int>{2, 1}));
  ASSERT_EQ(f.top(1).shape(), (std::vector<int>{2, 2}));
  ASSERT_EQ(f.top(2).shape(), (std::vector<int>{2, 1}));
  const std::vector<std::vector<float>> expected = {{0, 4}, {1, 2, 5, 6}, {3, 7}};
  for (int t = 0; t < 3; ++t)
    for (size_t i = 0; i < expected[t].size(); ++i) EXPECT_EQ(f.top(t).data()[i], expected[t][i]);
}

TEST(Slice, ForwardEqualPartsAlongNumWithLegacySliceDim) {
  LayerFixture f("type: 'Slice' slice_param { slice_dim: 0 }", {{4, 2}}, 2);
  Iota(f.bottom(0));
  f.Forward();
  for (int t = 0; t < 2; ++t) {
    ASSERT_EQ(f.top(t).shape(), (std::vector<int>{2, 2}));
    for (int i = 0; i < 4; ++i) EXPECT_EQ(f.top(t).data()[i], static_cast<float>(4 * t + i));
  }
}

TEST(Slice, BackwardGathers) {
  LayerFixture f("type: 'Slice' slice_param { axis: -1 slice_point: 2 }", {{2, 3}}, 2);
  f.Forward();
  const float d0[] = {10, 11, 12, 13}, d1[] = {20, 21};
  std::copy(d0, d0 + 4, f.top(0).diff());
  std::copy(d1, d1 + 2, f.top(1).diff());
  f.Backward();
  const float expected[] = {10, 11, 20, 12, 13, 21};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(f.bottom(0).diff()[i], expected[i]);
}

TEST(Slice, GradientCheckChannels) {
  LayerFixture f("type: 'Slice' slice_param { slice_point: 1 slice_point: 3 }", {{2, 6, 2}}, 3);
  f.FillBottoms();
  CheckGradient(f);
}

TEST(Slice, GradientCheckEqualPartsAlongNum) {
  LayerFixture f("type: 'Slice' slice_param { axis: 0 }", {{3, 2, 2}}, 3);
  f.FillBottoms();
  CheckGradient(f);
}

TEST(Slice, BadSlicePointsAreErrors) {
  try {
    LayerFixture f("name: 'sl' type: 'Slice'", {{2, 5}}, 2);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("layer sl (Slice)"), std::string::npos) << what;
    EXPECT_NE(what.find("2 5 (10)"), std::string::npos) << what;
  }
  EXPECT_THROW(LayerFixture("type: 'Slice' slice_param { slice_point: 2 }", {{2, 5}}, 3), Error);
  EXPECT_THROW(LayerFixture("type: 'Slice' slice_param { slice_point: 3 slice_point: 2 }", {{2, 5}}, 3), Error);
  EXPECT_THROW(LayerFixture("type: 'Slice' slice_param { slice_point: 0 }", {{2, 5}}, 2), Error);
  EXPECT_THROW(LayerFixture("type: 'Slice' slice_param { slice_point: 5 }", {{2, 5}}, 2), Error);
  EXPECT_THROW(LayerFixture("type: 'Slice' slice_param { axis: 2 }", {{2, 4}}, 2), Error);
}

}  // namespace cortado::test
