// inner_product_test.cpp — InnerProduct against hand-worked values and a direct loop, with axis,
// transpose and without bias; gradients; the size check on reshape.
#include "cortado/error.hpp"
#include "test_util.hpp"

namespace cortado::test {

TEST(InnerProduct, HandWorkedCase) {
  LayerFixture f("type: 'InnerProduct' inner_product_param { num_output: 2 }", {{2, 3}});
  ASSERT_EQ(f.top(0).shape(), (std::vector<int>{2, 2}));
  const float x[] = {1, 2, 3, 4, 5, 6}, w[] = {1, 0, -1, 0.5f, 0.5f, 0.5f}, b[] = {10, -1};
  std::copy(x, x + 6, f.bottom(0).data());
  std::copy(w, w + 6, f.layer().blobs()[0]->data());
  std::copy(b, b + 2, f.layer().blobs()[1]->data());
  f.Forward();
  // Row 1: (1 − 3) + 10 = 8, (1 + 2 + 3)/2 − 1 = 2; row 2: (4 − 6) + 10 = 8, 15/2 − 1 = 6.5.
  const float y[] = {8, 2, 8, 6.5f};
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(f.top(0).data()[i], y[i]);
  const float dy[] = {1, 2, 3, 4};
  std::copy(dy, dy + 4, f.top(0).diff());
  f.Backward();
  // dx = dy · W; dW = dyᵀ · x; db = column sums of dy.
  const float dx[] = {1 + 1, 1, -1 + 1, 3 + 2, 2, -3 + 2};
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(f.bottom(0).diff()[i], dx[i]);
  const float dw[] = {1 + 12, 2 + 15, 3 + 18, 2 + 16, 4 + 20, 6 + 24};
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(f.layer().blobs()[0]->diff()[i], dw[i]);
  EXPECT_FLOAT_EQ(f.layer().blobs()[1]->diff()[0], 4);
  EXPECT_FLOAT_EQ(f.layer().blobs()[1]->diff()[1], 6);
}

TEST(InnerProduct, AxisAndTransposeMatchDirectLoop) {
  // Bottom (2, 3, 4, 5) from axis 2: M = 6 rows of K = 20; top (2, 3, 7).
  for (bool transpose : {false, true}) {
    SCOPED_TRACE(transpose ? "transpose" : "plain");
    LayerFixture f(std::string("type: 'InnerProduct' inner_product_param { num_output: 7 axis: 2 transpose: ") +
                       (transpose ? "true" : "false") +
                       " weight_filler { type: 'gaussian' } bias_filler { type: 'gaussian' } }",
                   {{2, 3, 4, 5}});
    ASSERT_EQ(f.top(0).shape(), (std::vector<int>{2, 3, 7}));
    ASSERT_EQ(f.layer().blobs()[0]->shape(), transpose ? (std::vector<int>{20, 7}) : (std::vector<int>{7, 20}));
    f.FillBottoms();
    f.Forward();
    const float* x = f.bottom(0).data();
    const float* w = f.layer().blobs()[0]->data();
    const float* b = f.layer().blobs()[1]->data();
    for (int m = 0; m < 6; ++m)
      for (int n = 0; n < 7; ++n) {
        double y = b[n];
        for (int k = 0; k < 20; ++k) y += double(x[m * 20 + k]) * w[transpose ? k * 7 + n : n * 20 + k];
        EXPECT_NEAR(f.top(0).data()[m * 7 + n], y, 1e-4) << m << "," << n;
      }
  }
}

TEST(InnerProduct, NegativeAxisAndNoBias) {
  LayerFixture f("type: 'InnerProduct' inner_product_param { num_output: 4 axis: -1 bias_term: false "
                 "weight_filler { type: 'constant' value: 1 } }", {{2, 3, 5}});
  ASSERT_EQ(f.top(0).shape(), (std::vector<int>{2, 3, 4}));
  EXPECT_EQ(f.layer().blobs().size(), 1u);
  for (int i = 0; i < 30; ++i) f.bottom(0).data()[i] = static_cast<float>(i);
  f.Forward();
  for (int m = 0; m < 6; ++m)  // row m sums 5m … 5m+4
    for (int n = 0; n < 4; ++n) EXPECT_FLOAT_EQ(f.top(0).data()[m * 4 + n], 25.0f * m + 10.0f);
}

TEST(InnerProduct, GradientCheck) {
  for (const char* extra : {"", "transpose: true", "axis: 2", "bias_term: false"}) {
    SCOPED_TRACE(extra);
    LayerFixture f(std::string("type: 'InnerProduct' inner_product_param { num_output: 5 ") + extra +
                       " weight_filler { type: 'gaussian' } bias_filler { type: 'gaussian' } }",
                   {{3, 2, 3, 2}});
    f.FillBottoms();
    CheckGradient(f);
  }
}

TEST(InnerProduct, InputSizeMustMatchTheWeights) {
  LayerFixture f("name: 'ip1' type: 'InnerProduct' inner_product_param { num_output: 3 }", {{2, 4}});
  Blob other(std::vector<int>{2, 5});
  try {
    f.layer().Reshape({&other}, f.top());
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("ip1"), std::string::npos) << what;
    EXPECT_NE(what.find("expect 4"), std::string::npos) << what;
  }
  EXPECT_THROW(LayerFixture("type: 'InnerProduct' inner_product_param { }", {{2, 4}}), Error);
}

}  // namespace cortado::test
