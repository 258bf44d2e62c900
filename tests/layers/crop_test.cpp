// crop_test.cpp — Crop against hand-laid-out values (default axis 2 and offsets, one offset for all
// axes, one per axis, axis 1), the diff scattered back with zeros around it, gradients, and errors
// (a crop that does not fit, wrong offset counts, mismatched axis counts).
#include "cortado/error.hpp"
#include "test_util.hpp"

namespace cortado::test {

namespace {
void Iota(Blob& b) {
  for (int64_t i = 0; i < b.count(); ++i) b.data()[i] = static_cast<float>(i);
}
}  // namespace

TEST(Crop, DefaultAxisAndOffsetsKeepTheTopLeftCorner) {
  // bottom 0: 1×2×3×4 = 0..23; reference 5×7×2×2: only its last two dims count from axis 2.
  LayerFixture f("type: 'Crop'", {{1, 2, 3, 4}, {5, 7, 2, 2}});
  Iota(f.bottom(0));
  f.Forward();
  ASSERT_EQ(f.top(0).shape(), (std::vector<int>{1, 2, 2, 2}));
  const float expected[] = {0, 1, 4, 5, 12, 13, 16, 17};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(f.top(0).data()[i], expected[i]) << i;
}

TEST(Crop, OneOffsetForEveryCroppedAxis) {
  LayerFixture f("type: 'Crop' crop_param { offset: 1 }", {{1, 2, 3, 4}, {1, 1, 2, 2}});
  Iota(f.bottom(0));
  f.Forward();
  ASSERT_EQ(f.top(0).shape(), (std::vector<int>{1, 2, 2, 2}));
  const float expected[] = {5, 6, 9, 10, 17, 18, 21, 22};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(f.top(0).data()[i], expected[i]) << i;
}

TEST(Crop, OneOffsetPerAxisFromAxisOne) {
  // offsets (c, h, w) = (1, 0, 2): channel 1, rows 0..1, columns 2..3.
  LayerFixture f("type: 'Crop' crop_param { axis: 1 offset: 1 offset: 0 offset: 2 }", {{1, 2, 3, 4}, {9, 1, 2, 2}});
  Iota(f.bottom(0));
  f.Forward();
  ASSERT_EQ(f.top(0).shape(), (std::vector<int>{1, 1, 2, 2}));
  const float expected[] = {14, 15, 18, 19};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(f.top(0).data()[i], expected[i]) << i;
}

TEST(Crop, NegativeAxisAndAxisZero) {
  LayerFixture a("type: 'Crop' crop_param { axis: -1 offset: 1 }", {{2, 3}, {1, 2}});
  Iota(a.bottom(0));
  a.Forward();
  ASSERT_EQ(a.top(0).shape(), (std::vector<int>{2, 2}));
  const float ea[] = {1, 2, 4, 5};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(a.top(0).data()[i], ea[i]) << i;
  LayerFixture b("type: 'Crop' crop_param { axis: 0 offset: 1 offset: 0 }", {{3, 2}, {2, 1}});
  Iota(b.bottom(0));
  b.Forward();
  ASSERT_EQ(b.top(0).shape(), (std::vector<int>{2, 1}));
  EXPECT_EQ(b.top(0).data()[0], 2.0f);
  EXPECT_EQ(b.top(0).data()[1], 4.0f);
}

TEST(Crop, BackwardScattersTheDiffWithZerosElsewhere) {
  LayerFixture f("type: 'Crop' crop_param { offset: 1 }", {{1, 1, 3, 3}, {1, 1, 2, 2}});
  f.Forward();
  for (int i = 0; i < 4; ++i) f.top(0).diff()[i] = static_cast<float>(i + 1);
  for (int i = 0; i < 9; ++i) f.bottom(0).diff()[i] = 7.0f;  // stale values must be overwritten
  for (int i = 0; i < 4; ++i) f.bottom(1).diff()[i] = 7.0f;
  f.Backward();
  const float expected[] = {0, 0, 0, 0, 1, 2, 0, 3, 4};
  for (int i = 0; i < 9; ++i) EXPECT_EQ(f.bottom(0).diff()[i], expected[i]) << i;
  for (int i = 0; i < 4; ++i) EXPECT_EQ(f.bottom(1).diff()[i], 0.0f) << i;
  EXPECT_FALSE(f.layer().AllowForceBackward(1));
}

TEST(Crop, GradientCheck) {
  LayerFixture f("type: 'Crop' crop_param { axis: 1 offset: 1 offset: 0 offset: 2 }", {{2, 3, 3, 5}, {2, 2, 2, 3}});
  f.FillBottoms();
  GradientCheckOptions options;
  options.check_bottom = 0;
  CheckGradient(f, options);
}

TEST(Crop, CropLargerThanTheImageIsAnError) {
  const std::string what = ErrorOf([] { LayerFixture("name: 'crop' type: 'Crop'", {{1, 2, 3, 4}, {1, 2, 4, 4}}); });
  EXPECT_NE(what.find("layer crop (Crop)"), std::string::npos) << what;
  EXPECT_NE(what.find("1 2 3 4 (24)"), std::string::npos) << what;
  EXPECT_NE(what.find("1 2 4 4 (32)"), std::string::npos) << what;
  EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  // Fits without the offset, not with it.
  EXPECT_THROW(LayerFixture("type: 'Crop' crop_param { offset: 2 }", {{1, 2, 3, 4}, {1, 2, 2, 2}}), Error);
}

TEST(Crop, BadParametersAreErrors) {
  // Two offsets for three cropped axes.
  EXPECT_NE(ErrorOf([] {
              LayerFixture("name: 'c' type: 'Crop' crop_param { axis: 1 offset: 0 offset: 1 }",
                           {{1, 2, 3, 4}, {1, 2, 2, 2}});
            }).find("layer c (Crop)"),
            std::string::npos);
  EXPECT_THROW(LayerFixture("type: 'Crop'", {{1, 2, 3, 4}, {1, 2, 3}}), Error);
  EXPECT_THROW(LayerFixture("type: 'Crop' crop_param { axis: 4 }", {{1, 2, 3, 4}, {1, 2, 3, 4}}), Error);
  EXPECT_THROW(LayerFixture("type: 'Crop'", {{1, 2, 3, 4}}), Error);
}

}  // namespace cortado::test
