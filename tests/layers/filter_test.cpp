// filter_test.cpp — Filter: selected rows of two bottoms by hand, tops that change size from batch to
// batch (full size at setup), nothing selected, the backward scatter with zeros, the selector's shape
// rules and refused gradient, and a gradient check.
#include <cmath>

#include "cortado/error.hpp"
#include "cortado/layer_registry.hpp"
#include "index_gradient.hpp"
#include "test_util.hpp"

namespace cortado::test {

namespace {
constexpr const char* kFilter = "name: 'f' type: 'Filter'";
}  // namespace

TEST(Filter, ForwardAndBackwardMatchHandComputedValues) {
  LayerFixture f(kFilter, {{4, 2}, {4, 1, 3}, {4}}, 2);
  // At setup the tops hold every item (Caffe's first reshape).
  EXPECT_EQ(f.top(0).shape(), (std::vector<int>{4, 2}));
  EXPECT_EQ(f.top(1).shape(), (std::vector<int>{4, 1, 3}));
  for (int i = 0; i < 8; ++i) f.bottom(0).data()[i] = static_cast<float>(i);
  for (int i = 0; i < 12; ++i) f.bottom(1).data()[i] = 100.0f + i;
  const float selector[] = {0, 1, 0, -2};
  std::copy(selector, selector + 4, f.bottom(2).data());
  f.Forward();
  ASSERT_EQ(f.top(0).shape(), (std::vector<int>{2, 2}));
  ASSERT_EQ(f.top(1).shape(), (std::vector<int>{2, 1, 3}));
  const float y0[] = {2, 3, 6, 7}, y1[] = {103, 104, 105, 109, 110, 111};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(f.top(0).data()[i], y0[i]) << i;
  for (int i = 0; i < 6; ++i) EXPECT_EQ(f.top(1).data()[i], y1[i]) << i;

  for (int i = 0; i < 4; ++i) f.top(0).diff()[i] = 1.0f + i;
  for (int i = 0; i < 6; ++i) f.top(1).diff()[i] = -1.0f - i;
  for (int i = 0; i < 8; ++i) f.bottom(0).diff()[i] = 42.0f;  // rows not selected must be zeroed
  f.layer().Backward(f.top(), {true, true, false}, f.bottom());
  const float dx0[] = {0, 0, 1, 2, 0, 0, 3, 4}, dx1[] = {0, 0, 0, -1, -2, -3, 0, 0, 0, -4, -5, -6};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(f.bottom(0).diff()[i], dx0[i]) << i;
  for (int i = 0; i < 12; ++i) EXPECT_EQ(f.bottom(1).diff()[i], dx1[i]) << i;
}

TEST(Filter, TopsFollowEachBatchsSelection) {
  LayerFixture f(kFilter, {{4, 3}, {4, 1, 1, 1}});
  for (int i = 0; i < 12; ++i) f.bottom(0).data()[i] = static_cast<float>(i);
  const float first[] = {0, 0, 1, 0};
  std::copy(first, first + 4, f.bottom(1).data());
  f.Forward();
  ASSERT_EQ(f.top(0).shape(), (std::vector<int>{1, 3}));
  EXPECT_EQ(f.top(0).data()[0], 6.0f);
  const float all[] = {1, 1, std::nanf(""), 1};  // NaN counts as selected, as Caffe's `if (value)`
  std::copy(all, all + 4, f.bottom(1).data());
  f.Forward();
  ASSERT_EQ(f.top(0).shape(), (std::vector<int>{4, 3}));
  for (int i = 0; i < 12; ++i) EXPECT_EQ(f.top(0).data()[i], static_cast<float>(i));
}

TEST(Filter, NothingSelectedGivesEmptyTopsAndZeroGradients) {
  LayerFixture f(kFilter, {{3, 2}, {3}});
  f.FillBottoms();
  for (int i = 0; i < 3; ++i) f.bottom(1).data()[i] = 0;
  f.Forward();
  EXPECT_EQ(f.top(0).shape(), (std::vector<int>{0, 2}));
  for (int i = 0; i < 6; ++i) f.bottom(0).diff()[i] = 42.0f;
  f.layer().Backward(f.top(), {true, false}, f.bottom());
  for (int i = 0; i < 6; ++i) EXPECT_EQ(f.bottom(0).diff()[i], 0.0f);
}

TEST(Filter, SelectorGradientIsRefused) {
  LayerFixture f(kFilter, {{2, 2}, {2}});
  f.bottom(1).data()[0] = 1;
  f.Forward();
  EXPECT_NE(ErrorOf([&] { f.Backward(); }).find("layer f (Filter): cannot backpropagate to the selector"),
            std::string::npos);
  EXPECT_FALSE(f.layer().AllowForceBackward(1));
  EXPECT_TRUE(f.layer().AllowForceBackward(0));
}

TEST(Filter, ShapeErrorsNameTheLayer) {
  auto error = [](const std::vector<std::vector<int>>& shapes, int tops) {
    return ErrorOf([&] { LayerFixture(kFilter, shapes, tops); });
  };
  EXPECT_NE(error({{4, 2}, {4, 2}}, 1)
                .find("layer f (Filter): the selector (last bottom) must be (num) or (num, 1, ...)"),
            std::string::npos);
  EXPECT_NE(error({{4, 2}, {3}}, 1).find("layer f (Filter): bottom 0 (4 2 (8)) must have the selector's 3 items"),
            std::string::npos);
  EXPECT_NE(error({{4, 2}, {4, 2}, {4}}, 1).find("layer f (Filter): needs one top per filtered bottom"),
            std::string::npos);
  EXPECT_NE(error({{4}}, 0).find("layer f (Filter): takes at least 2 bottom"), std::string::npos);
  // Not in place.
  Context ctx(Device::kCPU, 1);
  Blob data(std::vector<int>{2, 2}), selector(std::vector<int>{2});
  auto layer = LayerRegistry::Create(ParseLayer(kFilter), ctx);
  EXPECT_NE(ErrorOf([&] { layer->SetUp({&data, &selector}, {&data}); }).find("layer f (Filter): cannot run in place"),
            std::string::npos);
}

TEST(Filter, GradientCheck) {
  LayerFixture f(kFilter, {{5, 2, 2}, {5, 3}, {5, 1}}, 2);
  f.FillBottoms();
  const float selector[] = {1, 0, 0, 1, 1};
  std::copy(selector, selector + 5, f.bottom(2).data());
  CheckGradientWithoutIndices(f, {2});
}

}  // namespace cortado::test
