// reduction_test.cpp — Reduction's four operations against hand-computed values (to a scalar with the
// default axis 0, per row from axis 1, a negative axis, coeff), their backward passes, gradient checks
// (ASUM with a kink at 0), and a bad axis.
#include "cortado/error.hpp"
#include "test_util.hpp"

namespace cortado::test {

namespace {
const float kValues[] = {1, -2, 3, -4, 5, -6};  // a 2×3 bottom

std::vector<float> Reduce(const std::string& param, const std::vector<int>& shape, std::vector<int>* top_shape) {
  LayerFixture f("type: 'Reduction' " + param, {shape});
  for (int i = 0; i < 6; ++i) f.bottom(0).data()[i] = kValues[i];
  f.Forward();
  *top_shape = f.top(0).shape();
  return std::vector<float>(f.top(0).data(), f.top(0).data() + f.top(0).count());
}
}  // namespace

TEST(Reduction, DefaultAxisReducesToAScalar) {
  std::vector<int> shape;
  EXPECT_EQ(Reduce("", {2, 3}, &shape), (std::vector<float>{-3}));
  EXPECT_TRUE(shape.empty());
  EXPECT_EQ(Reduce("reduction_param { operation: ASUM }", {2, 3}, &shape), (std::vector<float>{21}));
  EXPECT_EQ(Reduce("reduction_param { operation: SUMSQ }", {2, 3}, &shape), (std::vector<float>{91}));
  EXPECT_EQ(Reduce("reduction_param { operation: MEAN }", {2, 3}, &shape), (std::vector<float>{-0.5f}));
  EXPECT_EQ(Reduce("reduction_param { coeff: -2 }", {2, 3}, &shape), (std::vector<float>{6}));
}

TEST(Reduction, FromAxisOneReducesEachRow) {
  std::vector<int> shape;
  EXPECT_EQ(Reduce("reduction_param { axis: 1 }", {2, 3}, &shape), (std::vector<float>{2, -5}));
  EXPECT_EQ(shape, (std::vector<int>{2}));
  EXPECT_EQ(Reduce("reduction_param { axis: 1 operation: ASUM }", {2, 3}, &shape), (std::vector<float>{6, 15}));
  EXPECT_EQ(Reduce("reduction_param { axis: 1 operation: SUMSQ coeff: 2 }", {2, 3}, &shape),
            (std::vector<float>{28, 154}));
  const std::vector<float> mean = Reduce("reduction_param { axis: 1 operation: MEAN }", {2, 3}, &shape);
  EXPECT_FLOAT_EQ(mean[0], 2.0f / 3);
  EXPECT_FLOAT_EQ(mean[1], -5.0f / 3);
  // 1×2×3 from axis -1: the top keeps 1×2.
  EXPECT_EQ(Reduce("reduction_param { axis: -1 }", {1, 2, 3}, &shape), (std::vector<float>{2, -5}));
  EXPECT_EQ(shape, (std::vector<int>{1, 2}));
  // 2×3×1 from axis 2: nothing is summed.
  EXPECT_EQ(Reduce("reduction_param { axis: 2 operation: SUMSQ }", {2, 3, 1}, &shape),
            (std::vector<float>{1, 4, 9, 16, 25, 36}));
  EXPECT_EQ(shape, (std::vector<int>{2, 3}));
}

TEST(Reduction, Backward) {
  {
    LayerFixture f("type: 'Reduction' reduction_param { axis: 1 operation: MEAN coeff: 3 }", {{2, 3}});
    f.Forward();
    f.top(0).diff()[0] = 1;
    f.top(0).diff()[1] = 2;
    f.Backward();
    EXPECT_EQ(std::vector<float>(f.bottom(0).diff(), f.bottom(0).diff() + 6), (std::vector<float>{1, 1, 1, 2, 2, 2}));
  }
  {
    LayerFixture f("type: 'Reduction' reduction_param { operation: ASUM coeff: 2 }", {{3}});
    const float x[] = {1, 0, -2};
    for (int i = 0; i < 3; ++i) f.bottom(0).data()[i] = x[i];
    f.Forward();
    EXPECT_EQ(f.top(0).data()[0], 6.0f);
    f.top(0).diff()[0] = 1.5f;
    f.Backward();
    EXPECT_EQ(std::vector<float>(f.bottom(0).diff(), f.bottom(0).diff() + 3), (std::vector<float>{3, 0, -3}));
  }
  {
    LayerFixture f("type: 'Reduction' reduction_param { operation: SUMSQ coeff: 0.5 }", {{2}});
    f.bottom(0).data()[0] = 3;
    f.bottom(0).data()[1] = -1;
    f.Forward();
    EXPECT_EQ(f.top(0).data()[0], 5.0f);
    f.top(0).diff()[0] = 2;
    f.Backward();
    EXPECT_EQ(std::vector<float>(f.bottom(0).diff(), f.bottom(0).diff() + 2), (std::vector<float>{6, -2}));
  }
  {
    LayerFixture f("type: 'Reduction' reduction_param { coeff: -1 }", {{2, 2}});
    f.Forward();
    f.top(0).diff()[0] = 4;
    f.Backward();
    EXPECT_EQ(std::vector<float>(f.bottom(0).diff(), f.bottom(0).diff() + 4), (std::vector<float>(4, -4)));
  }
}

TEST(Reduction, GradientCheck) {
  for (const char* op : {"SUM", "ASUM", "SUMSQ", "MEAN"}) {
    for (const char* axis : {"0", "1", "-1"}) {
      SCOPED_TRACE(std::string(op) + " axis " + axis);
      LayerFixture f(std::string("type: 'Reduction' reduction_param { operation: ") + op + " axis: " + axis +
                         " coeff: 1.5 }",
                     {{2, 3, 4}});
      f.FillBottoms();
      GradientCheckOptions options;
      options.kink = 0.0f;
      options.kink_range = 0.02f;
      CheckGradient(f, options);
    }
  }
}

TEST(Reduction, AxisOutOfRangeIsAnError) {
  const std::string what =
      ErrorOf([] { LayerFixture("name: 'r' type: 'Reduction' reduction_param { axis: 3 }", {{2, 3, 4}}); });
  EXPECT_NE(what.find("layer r (Reduction)"), std::string::npos) << what;
  EXPECT_NE(what.find("2 3 4 (24)"), std::string::npos) << what;
  EXPECT_THROW(LayerFixture("type: 'Reduction' reduction_param { axis: -4 }", {{2, 3, 4}}), Error);
}

}  // namespace cortado::test
