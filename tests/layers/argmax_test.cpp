// argmax_test.cpp — ArgMax against hand-computed indices and values with and without an axis, with
// out_max_val and top_k > 1, Caffe's output shapes, Caffe's tie order (equal values: the higher index
// first, as partial_sort with std::greater on (value, index) pairs), parameter errors and the refused
// backward.
#include "cortado/error.hpp"
#include "test_util.hpp"

namespace cortado::test {

namespace {
// 2×4 items; item 0 has a tie between indices 1 and 3.
const float kItems[] = {1, 5, 3, 5, -1, -2, 0, -3};
// 2×3×2 (n, c, w): n0 = {1, 9 | 4, 2 | 4, 7}, n1 = {0, 0 | -1, 3 | 2, 3}.
const float kCube[] = {1, 9, 4, 2, 4, 7, 0, 0, -1, 3, 2, 3};

std::vector<float> RunArgMax(const std::string& param, const std::vector<int>& shape, const float* values,
                       std::vector<int>* top_shape) {
  LayerFixture f("type: 'ArgMax' " + param, {shape});
  for (int64_t i = 0; i < f.bottom(0).count(); ++i) f.bottom(0).data()[i] = values[i];
  f.Forward();
  *top_shape = f.top(0).shape();
  return std::vector<float>(f.top(0).data(), f.top(0).data() + f.top(0).count());
}
}  // namespace

TEST(ArgMax, WithoutAxisSearchesEachItem) {
  std::vector<int> shape;
  EXPECT_EQ(RunArgMax("", {2, 4}, kItems, &shape), (std::vector<float>{3, 2}));  // tie 1 vs 3: 3
  EXPECT_EQ(shape, (std::vector<int>{2, 1, 1}));
  EXPECT_EQ(RunArgMax("argmax_param { top_k: 3 }", {2, 4}, kItems, &shape), (std::vector<float>{3, 1, 2, 2, 0, 1}));
  EXPECT_EQ(shape, (std::vector<int>{2, 1, 3}));
  // Four axes: N×1×top_k×1, searched over all of C·H·W.
  EXPECT_EQ(RunArgMax("", {2, 1, 2, 2}, kItems, &shape), (std::vector<float>{3, 2}));
  EXPECT_EQ(shape, (std::vector<int>{2, 1, 1, 1}));
  EXPECT_EQ(RunArgMax("", {2, 3, 2}, kCube, &shape), (std::vector<float>{1, 5}));
}

TEST(ArgMax, WithoutAxisOutMaxValGivesIndicesThenValues) {
  std::vector<int> shape;
  EXPECT_EQ(RunArgMax("argmax_param { out_max_val: true top_k: 2 }", {2, 4}, kItems, &shape),
            (std::vector<float>{3, 1, 5, 5, 2, 0, 0, -1}));
  EXPECT_EQ(shape, (std::vector<int>{2, 2, 2}));
  EXPECT_EQ(RunArgMax("argmax_param { out_max_val: true }", {2, 4}, kItems, &shape), (std::vector<float>{3, 5, 2, 0}));
  EXPECT_EQ(shape, (std::vector<int>{2, 2, 1}));
}

TEST(ArgMax, AlongAnAxis) {
  std::vector<int> shape;
  EXPECT_EQ(RunArgMax("argmax_param { axis: 1 }", {2, 3, 2}, kCube, &shape), (std::vector<float>{2, 0, 2, 2}));
  EXPECT_EQ(shape, (std::vector<int>{2, 1, 2}));
  EXPECT_EQ(RunArgMax("argmax_param { axis: 1 top_k: 2 }", {2, 3, 2}, kCube, &shape),
            (std::vector<float>{2, 0, 1, 2, 2, 2, 0, 1}));
  EXPECT_EQ(shape, (std::vector<int>{2, 2, 2}));
  EXPECT_EQ(RunArgMax("argmax_param { axis: -1 }", {2, 3, 2}, kCube, &shape), (std::vector<float>{1, 0, 1, 1, 1, 1}));
  EXPECT_EQ(shape, (std::vector<int>{2, 3, 1}));
  EXPECT_EQ(RunArgMax("argmax_param { axis: 0 }", {2, 4}, kItems, &shape), (std::vector<float>{0, 0, 0, 0}));
  EXPECT_EQ(shape, (std::vector<int>{1, 4}));
}

TEST(ArgMax, AlongAnAxisOutMaxValGivesValuesOnly) {
  std::vector<int> shape;
  EXPECT_EQ(RunArgMax("argmax_param { axis: 1 top_k: 2 out_max_val: true }", {2, 3, 2}, kCube, &shape),
            (std::vector<float>{4, 9, 4, 7, 2, 3, 0, 3}));
  EXPECT_EQ(shape, (std::vector<int>{2, 2, 2}));
}

TEST(ArgMax, BadParametersAreErrors) {
  const std::string what =
      ErrorOf([] { LayerFixture("name: 'am' type: 'ArgMax' argmax_param { top_k: 5 }", {{2, 4}}); });
  EXPECT_NE(what.find("layer am (ArgMax)"), std::string::npos) << what;
  EXPECT_THROW(LayerFixture("type: 'ArgMax' argmax_param { top_k: 0 }", {{2, 4}}), Error);
  EXPECT_THROW(LayerFixture("type: 'ArgMax' argmax_param { axis: 1 top_k: 4 }", {{2, 3, 2}}), Error);
  EXPECT_THROW(LayerFixture("type: 'ArgMax' argmax_param { axis: 3 }", {{2, 3, 2}}), Error);
  LayerFixture ok("type: 'ArgMax' argmax_param { axis: 1 top_k: 3 }", {{2, 3, 2}});  // top_k = dim is fine
}

TEST(ArgMax, BackwardIsAnErrorOnlyWhenAskedFor) {
  LayerFixture f("name: 'am' type: 'ArgMax'", {{2, 4}});
  f.FillBottoms();
  f.Forward();
  EXPECT_FALSE(f.layer().AllowForceBackward(0));
  f.layer().Backward(f.top(), {false}, f.bottom());  // nothing asked: nothing happens
  const std::string what = ErrorOf([&] { f.Backward(); });
  EXPECT_NE(what.find("layer am (ArgMax)"), std::string::npos) << what;
}

}  // namespace cortado::test
