// concat_test.cpp — Concat along axes 0 and 1 against hand-laid-out values, gradients, the legacy
// concat_dim, and mismatched shapes.
#include "cortado/error.hpp"
#include "test_util.hpp"

namespace cortado::test {

namespace {
void Iota(Blob& b, float start) {
  for (int64_t i = 0; i < b.count(); ++i) b.data()[i] = start + static_cast<float>(i);
}
}  // namespace

TEST(Concat, ForwardAlongChannels) {
  // a: 2×1×2 = {0,1 | 2,3}; b: 2×2×2 = {10,11,12,13 | 14,15,16,17}.
  LayerFixture f("type: 'Concat'", {{2, 1, 2}, {2, 2, 2}});
  Iota(f.bottom(0), 0.0f);
  Iota(f.bottom(1), 10.0f);
  f.Forward();
  ASSERT_EQ(f.top(0).shape(), (std::vector<int>{2, 3, 2}));
  const float expected[] = {0, 1, 10, 11, 12, 13, 2, 3, 14, 15, 16, 17};
  for (int i = 0; i < 12; ++i) EXPECT_EQ(f.top(0).data()[i], expected[i]) << i;
}

TEST(Concat, ForwardAlongNumWithLegacyConcatDim) {
  LayerFixture f("type: 'Concat' concat_param { concat_dim: 0 }", {{1, 3}, {2, 3}, {1, 3}});
  Iota(f.bottom(0), 0.0f);
  Iota(f.bottom(1), 10.0f);
  Iota(f.bottom(2), 20.0f);
  f.Forward();
  ASSERT_EQ(f.top(0).shape(), (std::vector<int>{4, 3}));
  const float expected[] = {0, 1, 2, 10, 11, 12, 13, 14, 15, 20, 21, 22};
  for (int i = 0; i < 12; ++i) EXPECT_EQ(f.top(0).data()[i], expected[i]) << i;
}

TEST(Concat, BackwardSplitsTheDiff) {
  LayerFixture f("type: 'Concat' concat_param { axis: -1 }", {{2, 1}, {2, 2}});
  f.Forward();
  for (int i = 0; i < 6; ++i) f.top(0).diff()[i] = static_cast<float>(i);
  f.Backward();
  // top rows: [a0 b0 b1], [a1 b2 b3].
  EXPECT_EQ(f.bottom(0).diff()[0], 0.0f);
  EXPECT_EQ(f.bottom(0).diff()[1], 3.0f);
  const float b_expected[] = {1, 2, 4, 5};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(f.bottom(1).diff()[i], b_expected[i]);
}

TEST(Concat, GradientCheckChannels) {
  LayerFixture f("type: 'Concat'", {{2, 1, 3}, {2, 2, 3}, {2, 3, 3}});
  f.FillBottoms();
  CheckGradient(f);
}

TEST(Concat, GradientCheckNum) {
  LayerFixture f("type: 'Concat' concat_param { axis: 0 }", {{1, 2, 2}, {2, 2, 2}});
  f.FillBottoms();
  CheckGradient(f);
}

TEST(Concat, MismatchedShapesAreErrors) {
  try {
    LayerFixture f("name: 'cat' type: 'Concat'", {{2, 3, 4}, {2, 5, 3}});
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("layer cat (Concat)"), std::string::npos) << what;
    EXPECT_NE(what.find("2 3 4 (24)"), std::string::npos) << what;
    EXPECT_NE(what.find("2 5 3 (30)"), std::string::npos) << what;
  }
  EXPECT_THROW(LayerFixture("type: 'Concat'", {{2, 3}, {2, 3, 1}}), Error);
  EXPECT_THROW(LayerFixture("type: 'Concat' concat_param { axis: 2 }", {{2, 3}, {2, 3}}), Error);
  EXPECT_THROW(LayerFixture("type: 'Concat' concat_param { axis: 1 concat_dim: 1 }", {{2, 3}, {2, 3}}), Error);
}

}  // namespace cortado::test
