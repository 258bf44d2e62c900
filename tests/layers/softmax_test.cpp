// softmax_test.cpp — Softmax against hand-computed values and an independent loop (several axes),
// numerical stability for large inputs, and its gradient.
#include <cmath>

#include "cortado/error.hpp"
#include "test_util.hpp"

namespace cortado::test {

namespace {

// Softmax of x (outer × C × inner) along C, computed the plain way in double.
std::vector<float> ReferenceSoftmax(const float* x, int outer, int C, int inner) {
  std::vector<float> y(static_cast<size_t>(outer) * C * inner);
  for (int i = 0; i < outer; ++i)
    for (int j = 0; j < inner; ++j) {
      double sum = 0;
      for (int c = 0; c < C; ++c) sum += std::exp(static_cast<double>(x[(i * C + c) * inner + j]));
      for (int c = 0; c < C; ++c)
        y[(i * C + c) * inner + j] =
            static_cast<float>(std::exp(static_cast<double>(x[(i * C + c) * inner + j])) / sum);
    }
  return y;
}

}  // namespace

TEST(Softmax, ForwardMatchesHandComputedValues) {
  LayerFixture f("type: 'Softmax'", {{2, 3}});
  const float in[] = {1.0f, 2.0f, 3.0f, 0.0f, 0.0f, 0.0f};
  std::copy(in, in + 6, f.bottom(0).data());
  f.Forward();
  // e / (e + e² + e³) = 0.09003057, e² / ... = 0.24472847, e³ / ... = 0.66524096.
  const float expected[] = {0.09003057f, 0.24472847f, 0.66524096f, 1 / 3.0f, 1 / 3.0f, 1 / 3.0f};
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(f.top(0).data()[i], expected[i], 1e-6f);
}

TEST(Softmax, LargeInputsStayFinite) {
  LayerFixture f("type: 'Softmax'", {{2, 3}});
  // Only subtracting the row's max keeps every exponent <= 0 here.
  const float in[] = {1000.0f, 1001.0f, 1002.0f, -200.0f, 200.0f, 0.0f};
  std::copy(in, in + 6, f.bottom(0).data());
  f.Forward();
  const float expected[] = {0.09003057f, 0.24472847f, 0.66524096f, 0.0f, 1.0f, 0.0f};
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(f.top(0).data()[i], expected[i], 1e-6f) << i;
}

TEST(Softmax, SpatialAxisMatchesReference) {
  LayerFixture f("type: 'Softmax'", {{2, 3, 2, 2}});
  f.FillBottoms(2.0f);
  f.Forward();
  const auto ref = ReferenceSoftmax(f.bottom(0).data(), 2, 3, 4);
  for (size_t i = 0; i < ref.size(); ++i) EXPECT_NEAR(f.top(0).data()[i], ref[i], 1e-6f) << i;
}

TEST(Softmax, LastAxisMatchesReference) {
  LayerFixture f("type: 'Softmax' softmax_param { axis: -1 }", {{2, 3, 4}});
  f.FillBottoms(2.0f);
  f.Forward();
  const auto ref = ReferenceSoftmax(f.bottom(0).data(), 6, 4, 1);
  for (size_t i = 0; i < ref.size(); ++i) EXPECT_NEAR(f.top(0).data()[i], ref[i], 1e-6f) << i;
}

TEST(Softmax, BadAxisIsAnError) {
  EXPECT_THROW(LayerFixture("type: 'Softmax' softmax_param { axis: 3 }", {{2, 3, 4}}), Error);
}

TEST(Softmax, GradientCheck) {
  LayerFixture f("type: 'Softmax'", {{2, 4, 3}});
  f.FillBottoms();
  CheckGradient(f);
}

TEST(Softmax, GradientCheckAxis2) {
  LayerFixture f("type: 'Softmax' softmax_param { axis: 2 }", {{2, 3, 4}});
  f.FillBottoms();
  CheckGradient(f);
}

}  // namespace cortado::test
