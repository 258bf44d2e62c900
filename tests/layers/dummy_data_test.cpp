// dummy_data_test.cpp — DummyData: shapes (new and legacy fields), constant and random fillers,
// refilling on every Forward, and parameter errors.
#include "cortado/error.hpp"
#include "test_util.hpp"

namespace cortado::test {

TEST(DummyData, DefaultFillerIsConstantZero) {
  LayerFixture f("type: 'DummyData' dummy_data_param { shape { dim: 2 dim: 3 } }", {});
  EXPECT_EQ(f.top(0).shape(), (std::vector<int>{2, 3}));
  std::fill(f.top(0).data(), f.top(0).data() + 6, 9.0f);
  f.Forward();
  for (int i = 0; i < 6; ++i) EXPECT_EQ(f.top(0).data()[i], 0.0f);
}

TEST(DummyData, OneFillerAndShapePerTop) {
  LayerFixture f(R"(type: 'DummyData' dummy_data_param {
                      data_filler { type: 'constant' value: 2.5 }
                      data_filler { type: 'constant' value: -1 }
                      shape { dim: 4 } shape { dim: 1 dim: 2 } })",
                 {}, 2);
  ASSERT_EQ(f.top(0).shape(), (std::vector<int>{4}));
  ASSERT_EQ(f.top(1).shape(), (std::vector<int>{1, 2}));
  f.Forward();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(f.top(0).data()[i], 2.5f);
  for (int i = 0; i < 2; ++i) EXPECT_EQ(f.top(1).data()[i], -1.0f);
}

TEST(DummyData, SharedFillerAndLegacyShape) {
  LayerFixture f(R"(type: 'DummyData' dummy_data_param {
                      data_filler { type: 'constant' value: 7 }
                      num: 2 channels: 3 height: 1 width: 4 num: 1 channels: 1 height: 2 width: 2 })",
                 {}, 2);
  EXPECT_EQ(f.top(0).shape(), (std::vector<int>{2, 3, 1, 4}));
  EXPECT_EQ(f.top(1).shape(), (std::vector<int>{1, 1, 2, 2}));
  f.Forward();
  for (int t = 0; t < 2; ++t)
    for (int64_t i = 0; i < f.top(t).count(); ++i) EXPECT_EQ(f.top(t).data()[i], 7.0f);
}

TEST(DummyData, RandomFillerRefillsEveryForward) {
  LayerFixture f("type: 'DummyData' dummy_data_param { data_filler { type: 'uniform' min: 2 max: 3 } "
                 "shape { dim: 50 } }",
                 {});
  f.Forward();
  const std::vector<float> first(f.top(0).data(), f.top(0).data() + 50);
  f.Forward();
  int changed = 0;
  for (int i = 0; i < 50; ++i) {
    EXPECT_GE(f.top(0).data()[i], 2.0f);
    EXPECT_LE(f.top(0).data()[i], 3.0f);
    changed += f.top(0).data()[i] != first[i];
  }
  EXPECT_GT(changed, 40);
}

namespace {
std::string SetUpError(const std::string& text, int tops) {
  try {
    LayerFixture f(text, {}, tops);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(DummyData, BadParametersAreErrors) {
  const std::string filler_count = SetUpError(
      "name: 'd' type: 'DummyData' dummy_data_param { data_filler {} data_filler {} shape { dim: 1 } }", 3);
  EXPECT_NE(filler_count.find("layer d (DummyData)"), std::string::npos) << filler_count;
  EXPECT_NE(filler_count.find("data_filler"), std::string::npos) << filler_count;
  EXPECT_NE(SetUpError("type: 'DummyData' dummy_data_param { shape { dim: 1 } num: 1 channels: 1 "
                       "height: 1 width: 1 }", 1), "");
  EXPECT_NE(SetUpError("type: 'DummyData' dummy_data_param { shape { dim: 1 } shape { dim: 2 } }", 3), "");
  EXPECT_NE(SetUpError("type: 'DummyData' dummy_data_param { num: 1 channels: 1 height: 1 }", 1), "");
  EXPECT_NE(SetUpError("type: 'DummyData'", 1), "");
}

}  // namespace cortado::test
