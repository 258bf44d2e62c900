// eltwise_test.cpp — Eltwise SUM (with coeff), PROD (stable and dividing gradients) and MAX against
// hand-computed values, a gradient check per operation, and parameter / shape errors.
#include <algorithm>
#include <random>

#include "cortado/error.hpp"
#include "test_util.hpp"

namespace cortado::test {

namespace {
const float kA[] = {1, 2, 3}, kB[] = {4, -5, 6}, kC[] = {0.5f, 2, -1};

void SetBottoms(LayerFixture& f) {
  const float* values[] = {kA, kB, kC};
  for (size_t k = 0; k < f.bottom().size(); ++k) std::copy(values[k], values[k] + 3, f.bottom(k).data());
}

void ExpectTop(LayerFixture& f, const std::vector<float>& expected) {
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_FLOAT_EQ(f.top(0).data()[i], expected[i]) << i;
}

void ExpectDiff(Blob& b, const std::vector<float>& expected) {
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_FLOAT_EQ(b.diff()[i], expected[i]) << i;
}

// Magnitudes in [0.5, 1.5] with random signs: PROD's quotient gradient stays well conditioned.
void FillAwayFromZero(LayerFixture& f) {
  std::uniform_real_distribution<float> mag(0.5f, 1.5f);
  std::bernoulli_distribution negative(0.5);
  for (Blob* b : f.bottom())
    for (int64_t i = 0; i < b->count(); ++i) b->data()[i] = mag(f.rng()) * (negative(f.rng()) ? -1.0f : 1.0f);
}
}  // namespace

TEST(Eltwise, SumWithCoefficients) {
  LayerFixture f("type: 'Eltwise' eltwise_param { coeff: 2 coeff: -1 }", {{3}, {3}});
  SetBottoms(f);
  f.Forward();
  ExpectTop(f, {-2, 9, 0});
  std::fill(f.top(0).diff(), f.top(0).diff() + 3, 0.5f);
  f.Backward();
  ExpectDiff(f.bottom(0), {1, 1, 1});
  ExpectDiff(f.bottom(1), {-0.5f, -0.5f, -0.5f});
}

TEST(Eltwise, ProdForwardAndBothGradients) {
  for (const char* stable : {"true", "false"}) {
    LayerFixture f(std::string("type: 'Eltwise' eltwise_param { operation: PROD stable_prod_grad: ") + stable + " }",
                   {{3}, {3}, {3}});
    SetBottoms(f);
    f.Forward();
    ExpectTop(f, {2, -20, -18});
    const float dy[] = {1, 2, -1};
    std::copy(dy, dy + 3, f.top(0).diff());
    f.Backward();
    ExpectDiff(f.bottom(0), {2, -20, 6});    // dy · b · c
    ExpectDiff(f.bottom(1), {0.5f, 8, 3});   // dy · a · c
    ExpectDiff(f.bottom(2), {4, -20, -18});  // dy · a · b
  }
}

TEST(Eltwise, MaxRoutesTheGradientToTheWinner) {
  LayerFixture f("type: 'Eltwise' eltwise_param { operation: MAX }", {{3}, {3}, {3}});
  SetBottoms(f);
  f.bottom(2).data()[1] = 7.0f;  // c = {0.5, 7, -1}
  f.Forward();
  ExpectTop(f, {4, 7, 6});
  const float dy[] = {1, 2, 3};
  std::copy(dy, dy + 3, f.top(0).diff());
  f.Backward();
  ExpectDiff(f.bottom(0), {0, 0, 0});
  ExpectDiff(f.bottom(1), {1, 0, 3});
  ExpectDiff(f.bottom(2), {0, 2, 0});
}

TEST(Eltwise, MaxTieGoesToTheFirstBottom) {
  LayerFixture f("type: 'Eltwise' eltwise_param { operation: MAX }", {{1}, {1}});
  f.bottom(0).data()[0] = f.bottom(1).data()[0] = 2.0f;
  f.Forward();
  f.top(0).diff()[0] = 1.0f;
  f.Backward();
  EXPECT_EQ(f.bottom(0).diff()[0], 1.0f);
  EXPECT_EQ(f.bottom(1).diff()[0], 0.0f);
}

TEST(Eltwise, SumGradientCheck) {
  LayerFixture f("type: 'Eltwise' eltwise_param { coeff: 1.5 coeff: -0.5 coeff: 2 }", {{2, 3, 2}, {2, 3, 2}, {2, 3, 2}});
  f.FillBottoms();
  CheckGradient(f);
}

TEST(Eltwise, ProdGradientCheck) {
  LayerFixture f("type: 'Eltwise' eltwise_param { operation: PROD }", {{2, 3, 2}, {2, 3, 2}, {2, 3, 2}});
  FillAwayFromZero(f);
  CheckGradient(f);
}

TEST(Eltwise, UnstableProdGradientCheck) {
  LayerFixture f("type: 'Eltwise' eltwise_param { operation: PROD stable_prod_grad: false }",
                 {{2, 3, 2}, {2, 3, 2}});
  FillAwayFromZero(f);
  CheckGradient(f);
}

TEST(Eltwise, MaxGradientCheck) {
  // Per element the three bottoms take the levels −1, 0, 1 in a random order plus noise below 0.3,
  // so they stay at least 0.4 apart: no finite-difference step crosses a tie.
  LayerFixture f("type: 'Eltwise' eltwise_param { operation: MAX }", {{2, 3, 2}, {2, 3, 2}, {2, 3, 2}});
  std::uniform_real_distribution<float> noise(-0.3f, 0.3f);
  for (int64_t i = 0; i < f.bottom(0).count(); ++i) {
    float levels[] = {-1, 0, 1};
    std::shuffle(levels, levels + 3, f.rng());
    for (int k = 0; k < 3; ++k) f.bottom(k).data()[i] = levels[k] + noise(f.rng());
  }
  CheckGradient(f);
}

TEST(Eltwise, BadParametersAndShapesAreErrors) {
  try {
    LayerFixture f("name: 'add' type: 'Eltwise'", {{2, 3}, {3, 2}});
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("layer add (Eltwise)"), std::string::npos) << what;
    EXPECT_NE(what.find("2 3 (6)"), std::string::npos) << what;
    EXPECT_NE(what.find("3 2 (6)"), std::string::npos) << what;
  }
  EXPECT_THROW(LayerFixture("type: 'Eltwise' eltwise_param { operation: PROD coeff: 1 coeff: 1 }", {{2}, {2}}), Error);
  EXPECT_THROW(LayerFixture("type: 'Eltwise' eltwise_param { operation: MAX coeff: 1 coeff: 1 }", {{2}, {2}}), Error);
  EXPECT_THROW(LayerFixture("type: 'Eltwise' eltwise_param { coeff: 1 }", {{2}, {2}}), Error);
  EXPECT_THROW(LayerFixture("type: 'Eltwise'", {{2}}), Error);  // at least two bottoms
}

}  // namespace cortado::test
