// tile_test.cpp — Tile against hand-laid-out values (axis 1 by default, axis 0, a negative axis), the
// backward sum over the copies, gradients, and parameter errors.
#include "cortado/error.hpp"
#include "test_util.hpp"

namespace cortado::test {

namespace {
void Iota(Blob& b) {
  for (int64_t i = 0; i < b.count(); ++i) b.data()[i] = static_cast<float>(i);
}
}  // namespace

TEST(Tile, ForwardAlongTheDefaultAxis) {
  LayerFixture f("type: 'Tile' tile_param { tiles: 2 }", {{2, 3}});
  Iota(f.bottom(0));
  f.Forward();
  ASSERT_EQ(f.top(0).shape(), (std::vector<int>{2, 6}));
  const float expected[] = {0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5};
  for (int i = 0; i < 12; ++i) EXPECT_EQ(f.top(0).data()[i], expected[i]) << i;
}

TEST(Tile, ForwardAlongAxisZeroAndANegativeAxis) {
  LayerFixture a("type: 'Tile' tile_param { axis: 0 tiles: 3 }", {{2, 2}});
  Iota(a.bottom(0));
  a.Forward();
  ASSERT_EQ(a.top(0).shape(), (std::vector<int>{6, 2}));
  for (int i = 0; i < 12; ++i) EXPECT_EQ(a.top(0).data()[i], static_cast<float>(i % 4)) << i;
  // 1×2×2 tiled twice along the last axis: each row of two repeated in place.
  LayerFixture b("type: 'Tile' tile_param { axis: -1 tiles: 2 }", {{1, 2, 2}});
  Iota(b.bottom(0));
  b.Forward();
  ASSERT_EQ(b.top(0).shape(), (std::vector<int>{1, 2, 4}));
  const float expected[] = {0, 1, 0, 1, 2, 3, 2, 3};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(b.top(0).data()[i], expected[i]) << i;
}

TEST(Tile, BackwardSumsTheCopies) {
  LayerFixture f("type: 'Tile' tile_param { tiles: 2 }", {{2, 3}});
  f.Forward();
  for (int i = 0; i < 12; ++i) f.top(0).diff()[i] = static_cast<float>(i);
  f.Backward();
  const float expected[] = {3, 5, 7, 15, 17, 19};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(f.bottom(0).diff()[i], expected[i]) << i;
}

TEST(Tile, GradientCheck) {
  LayerFixture a("type: 'Tile' tile_param { tiles: 3 }", {{2, 3, 2}});
  a.FillBottoms();
  CheckGradient(a);
  LayerFixture b("type: 'Tile' tile_param { axis: 2 tiles: 2 }", {{2, 2, 3}});
  b.FillBottoms();
  CheckGradient(b);
}

TEST(Tile, BadParametersAreErrors) {
  const std::string what = ErrorOf([] { LayerFixture("name: 't' type: 'Tile'", {{2, 3}}); });
  EXPECT_NE(what.find("layer t (Tile)"), std::string::npos) << what;
  EXPECT_NE(what.find("tiles"), std::string::npos) << what;
  EXPECT_THROW(LayerFixture("type: 'Tile' tile_param { tiles: 0 }", {{2, 3}}), Error);
  EXPECT_THROW(LayerFixture("type: 'Tile' tile_param { tiles: -2 }", {{2, 3}}), Error);
  EXPECT_THROW(LayerFixture("type: 'Tile' tile_param { axis: 2 tiles: 2 }", {{2, 3}}), Error);
}

}  // namespace cortado::test
