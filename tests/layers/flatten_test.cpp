// flatten_test.cpp — Flatten: output shapes for axis/end_axis, the top viewing the bottom's memory,
// and out-of-range axes.
#include "cortado/error.hpp"
#include "test_util.hpp"

namespace cortado::test {

namespace {
std::vector<int> FlatShape(const std::string& params, const std::vector<int>& bottom) {
  LayerFixture f("type: 'Flatten' " + params, {bottom});
  return f.top(0).shape();
}
}  // namespace

TEST(Flatten, Shapes) {
  EXPECT_EQ(FlatShape("", {2, 3, 4, 5}), (std::vector<int>{2, 60}));
  EXPECT_EQ(FlatShape("flatten_param { axis: 0 }", {2, 3, 4, 5}), (std::vector<int>{120}));
  EXPECT_EQ(FlatShape("flatten_param { axis: 1 end_axis: 2 }", {2, 3, 4, 5}), (std::vector<int>{2, 12, 5}));
  EXPECT_EQ(FlatShape("flatten_param { axis: -2 }", {2, 3, 4, 5}), (std::vector<int>{2, 3, 20}));
  EXPECT_EQ(FlatShape("flatten_param { axis: 2 end_axis: -2 }", {2, 3, 4, 5}), (std::vector<int>{2, 3, 4, 5}));
  EXPECT_EQ(FlatShape("", {6, 7}), (std::vector<int>{6, 7}));
}

TEST(Flatten, TopIsAViewOfTheBottom) {
  LayerFixture f("type: 'Flatten'", {{2, 3, 2}});
  ASSERT_EQ(f.top(0).shape(), (std::vector<int>{2, 6}));
  EXPECT_EQ(f.top(0).data(), f.bottom(0).data());
  EXPECT_EQ(f.top(0).diff(), f.bottom(0).diff());
  for (int i = 0; i < 12; ++i) f.bottom(0).data()[i] = static_cast<float>(i);
  f.Forward();
  // top[n][j] = bottom[n][c][w] with j = c·2 + w: the same row-major order.
  for (int n = 0; n < 2; ++n)
    for (int j = 0; j < 6; ++j) EXPECT_EQ(f.top(0).data_at(n, j), static_cast<float>(n * 6 + j));
}

TEST(Flatten, GradientCheck) {
  LayerFixture f("type: 'Flatten'", {{2, 3, 2}});
  f.FillBottoms();
  CheckGradient(f);
}

TEST(Flatten, BadAxesAreErrors) {
  for (const char* params : {"flatten_param { axis: 4 }", "flatten_param { end_axis: -5 }",
                             "flatten_param { axis: 2 end_axis: 1 }"}) {
    try {
      LayerFixture f(std::string("name: 'fl' type: 'Flatten' ") + params, {{2, 3, 4, 5}});
      ADD_FAILURE() << "expected an Error for " << params;
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("layer fl (Flatten)"), std::string::npos) << what;
      EXPECT_NE(what.find("2 3 4 5 (120)"), std::string::npos) << what;
    }
  }
}

}  // namespace cortado::test
