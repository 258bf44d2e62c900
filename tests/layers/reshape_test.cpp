// reshape_test.cpp — Reshape: 0 (copy) and −1 (infer) dims, axis / num_axes ranges, the top viewing
// the bottom's memory, and impossible reshapes.
#include "cortado/error.hpp"
#include "test_util.hpp"

namespace cortado::test {

namespace {
std::vector<int> NewShape(const std::string& params, const std::vector<int>& bottom) {
  LayerFixture f("type: 'Reshape' reshape_param { " + params + " }", {bottom});
  return f.top(0).shape();
}

std::string SetUpError(const std::string& params, const std::vector<int>& bottom) {
  try {
    LayerFixture f("name: 'rs' type: 'Reshape' reshape_param { " + params + " }", {bottom});
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(Reshape, Shapes) {
  const std::vector<int> x = {2, 3, 4, 5};
  EXPECT_EQ(NewShape("shape { dim: 6 dim: 20 }", x), (std::vector<int>{6, 20}));
  EXPECT_EQ(NewShape("shape { dim: 0 dim: -1 }", x), (std::vector<int>{2, 60}));
  EXPECT_EQ(NewShape("shape { dim: 0 dim: 0 dim: -1 dim: 2 }", x), (std::vector<int>{2, 3, 10, 2}));
  EXPECT_EQ(NewShape("shape { dim: -1 }", x), (std::vector<int>{120}));
  EXPECT_EQ(NewShape("shape { dim: 0 dim: 0 dim: 0 dim: 0 }", x), x);
  // Replace only axes [1, 3): 3·4 → 12.
  EXPECT_EQ(NewShape("shape { dim: -1 } axis: 1 num_axes: 2", x), (std::vector<int>{2, 12, 5}));
  // 0 copies the bottom dim at axis + position.
  EXPECT_EQ(NewShape("shape { dim: 0 dim: 2 dim: 2 } axis: 1 num_axes: 2", x), (std::vector<int>{2, 3, 2, 2, 5}));
  // axis −1 inserts after the last axis; num_axes 0 inserts without replacing.
  EXPECT_EQ(NewShape("shape { dim: 1 } axis: -1 num_axes: 0", x), (std::vector<int>{2, 3, 4, 5, 1}));
  EXPECT_EQ(NewShape("shape { dim: 1 dim: 1 } axis: 0 num_axes: 0", x), (std::vector<int>{1, 1, 2, 3, 4, 5}));
  EXPECT_EQ(NewShape("shape { dim: 2 dim: -1 } axis: -2", {2, 3, 4, 6}), (std::vector<int>{2, 3, 4, 2, 3}));
}

TEST(Reshape, TopIsAViewOfTheBottom) {
  LayerFixture f("type: 'Reshape' reshape_param { shape { dim: 3 dim: 2 } }", {{2, 3}});
  EXPECT_EQ(f.top(0).data(), f.bottom(0).data());
  EXPECT_EQ(f.top(0).diff(), f.bottom(0).diff());
  for (int i = 0; i < 6; ++i) f.bottom(0).data()[i] = static_cast<float>(i);
  f.Forward();
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 2; ++c) EXPECT_EQ(f.top(0).data_at(r, c), static_cast<float>(r * 2 + c));
}

TEST(Reshape, GradientCheck) {
  LayerFixture f("type: 'Reshape' reshape_param { shape { dim: 0 dim: -1 } }", {{2, 3, 2}});
  f.FillBottoms();
  CheckGradient(f);
}

TEST(Reshape, ImpossibleReshapesNameTheLayerAndBothShapes) {
  const std::vector<int> x = {2, 3, 4};
  const std::string count = SetUpError("shape { dim: 5 dim: 5 }", x);
  EXPECT_NE(count.find("layer rs (Reshape)"), std::string::npos) << count;
  EXPECT_NE(count.find("2 3 4 (24)"), std::string::npos) << count;
  EXPECT_NE(count.find("{ 5 5 }"), std::string::npos) << count;
  const std::string two = SetUpError("shape { dim: -1 dim: -1 }", x);
  EXPECT_NE(two.find("layer rs (Reshape)"), std::string::npos) << two;
  EXPECT_NE(two.find("2 3 4 (24)"), std::string::npos) << two;
  EXPECT_NE(two.find("{ -1 -1 }"), std::string::npos) << two;
  EXPECT_NE(two.find("only one"), std::string::npos) << two;
  EXPECT_NE(SetUpError("shape { dim: 5 dim: -1 }", x), "");         // 24 does not divide by 5
  EXPECT_NE(SetUpError("shape { dim: 0 dim: 0 dim: 0 dim: 0 }", x), "");  // nothing to copy at axis 3
  EXPECT_NE(SetUpError("shape { dim: -2 dim: -12 }", x), "");
  EXPECT_NE(SetUpError("shape { dim: 1 } axis: 4", x), "");
  EXPECT_NE(SetUpError("shape { dim: 1 } axis: 2 num_axes: 2", x), "");
}

}  // namespace cortado::test
