// contrastive_loss_test.cpp — ContrastiveLoss: loss and gradients by hand (current and legacy forms,
// margins), 4-D inputs, shape errors and gradient checks.
#include "cortado/error.hpp"
#include "test_util.hpp"

namespace cortado::test {

namespace {

// Three pairs of 2-vectors: similar at distance 1, dissimilar at 0.5, dissimilar at 5.
const float kA[] = {1, 0, 0, 0, 3, 4};
const float kB[] = {0, 0, 0, 0.5f, 0, 0};
const float kY[] = {1, 0, 0};

void FillPairs(LayerFixture& f) {
  std::copy(kA, kA + 6, f.bottom(0).data());
  std::copy(kB, kB + 6, f.bottom(1).data());
  std::copy(kY, kY + 3, f.bottom(2).data());
}

float LossOf(const std::string& extra) {
  LayerFixture f("type: 'ContrastiveLoss' " + extra, {{3, 2}, {3, 2}, {3}});
  FillPairs(f);
  return f.Forward();
}

}  // namespace

TEST(ContrastiveLoss, ForwardMatchesHandComputedValues) {
  // (1 + (1 − 0.5)² + 0) / (2·3).
  EXPECT_NEAR(LossOf(""), 1.25f / 6, 1e-6f);
  // Legacy: (1 + max(1 − 0.25, 0) + 0) / 6.
  EXPECT_NEAR(LossOf("contrastive_loss_param { legacy_version: true }"), 1.75f / 6, 1e-6f);
  // Margin 10: (1 + 9.5² + 5²) / 6.
  EXPECT_NEAR(LossOf("contrastive_loss_param { margin: 10 }"), (1 + 90.25f + 25) / 6, 1e-5f);
  // N × C × 1 × 1 inputs behave as N × C; a label of 2 (or −3) is "similar", 0.5 is not.
  LayerFixture f("type: 'ContrastiveLoss'", {{3, 2, 1, 1}, {3, 2, 1, 1}, {3}});
  FillPairs(f);
  f.bottom(2).data()[0] = 2;
  f.bottom(2).data()[1] = 0.5f;
  EXPECT_NEAR(f.Forward(), 1.25f / 6, 1e-6f);
  f.bottom(2).data()[0] = -3;
  EXPECT_NEAR(f.Forward(), 1.25f / 6, 1e-6f);
}

TEST(ContrastiveLoss, BackwardMatchesHandComputedValues) {
  LayerFixture f("type: 'ContrastiveLoss' loss_weight: 3", {{3, 2}, {3, 2}, {3}});
  FillPairs(f);
  for (int i = 0; i < 3; ++i) f.bottom(2).diff()[i] = 42.0f;  // labels never get a gradient
  EXPECT_NEAR(f.Forward(), 3 * 1.25f / 6, 1e-6f);
  f.Backward();
  // alpha = 3/3 = 1. Pair 0: (a − b) = (1, 0). Pair 1: −(1 − 0.5)/(0.5 + 1e-4) · (0, −0.5). Pair 2: 0.
  const float da[] = {1, 0, 0, 0.5f * 0.5f / 0.5001f, 0, 0};
  for (int i = 0; i < 6; ++i) {
    EXPECT_NEAR(f.bottom(0).diff()[i], da[i], 1e-6f) << i;
    EXPECT_NEAR(f.bottom(1).diff()[i], -da[i], 1e-6f) << i;
  }
  for (int i = 0; i < 3; ++i) EXPECT_EQ(f.bottom(2).diff()[i], 42.0f);
}

TEST(ContrastiveLoss, LegacyBackwardMatchesHandComputedValues) {
  LayerFixture f("type: 'ContrastiveLoss' contrastive_loss_param { legacy_version: true }", {{3, 2}, {3, 2}, {3}});
  FillPairs(f);
  f.Forward();
  f.Backward();
  // alpha = 1/3. Pair 1: −alpha · (0, −0.5) while 1 − 0.25 > 0.
  const float da[] = {1 / 3.0f, 0, 0, 0.5f / 3, 0, 0};
  for (int i = 0; i < 6; ++i) {
    EXPECT_NEAR(f.bottom(0).diff()[i], da[i], 1e-6f) << i;
    EXPECT_NEAR(f.bottom(1).diff()[i], -da[i], 1e-6f) << i;
  }
}

TEST(ContrastiveLoss, ShapeErrors) {
  try {
    LayerFixture f("name: 'pairs' type: 'ContrastiveLoss'", {{3, 2}, {3, 4}, {3}});
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("layer pairs (ContrastiveLoss)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(LayerFixture("type: 'ContrastiveLoss'", {{3, 2, 2, 1}, {3, 2, 2, 1}, {3}}), Error);
  EXPECT_THROW(LayerFixture("type: 'ContrastiveLoss'", {{3, 2}, {3, 2}, {4}}), Error);
  EXPECT_THROW(LayerFixture("type: 'ContrastiveLoss'", {{3, 2}, {3, 2}}), Error);
  EXPECT_NO_THROW(LayerFixture("type: 'ContrastiveLoss'", {{3, 2}, {3, 2}, {3, 1, 1, 1}}));
}

TEST(ContrastiveLoss, GradientCheck) {
  for (const std::string extra : {"", "contrastive_loss_param { legacy_version: true }",
                                  "loss_weight: 2 contrastive_loss_param { margin: 3 }"}) {
    SCOPED_TRACE(extra);
    LayerFixture f("type: 'ContrastiveLoss' " + extra, {{6, 3}, {6, 3}, {6}});
    f.FillBottoms(0.5f);
    for (int i = 0; i < 6; ++i) f.bottom(2).data()[i] = i % 2;
    GradientCheckOptions o;
    o.skip_bottoms = {2};
    CheckGradient(f, o);
  }
}

}  // namespace cortado::test
