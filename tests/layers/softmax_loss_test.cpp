// softmax_loss_test.cpp — SoftmaxWithLoss: loss by hand, every normalization mode, ignore_label
// (loss and gradient), the probability top, label range errors, and gradient checks.
#include <cmath>

#include "cortado/error.hpp"
#include "test_util.hpp"

namespace cortado::test {

namespace {

// Scores (2 × 3 × 2): softmax over the 3 classes at each of the 2 × 2 positions; labels (2 × 2).
const float kScores[] = {1, 0, 2, 0, 3, 0,    // sample 0: classes × positions
                         -1, 2, 0, 2, 1, 2};  // sample 1
const float kLabels[] = {2, 1, 0, 1};         // (sample, position)

// −log p[label] at one position, computed directly.
double Nll(int sample, int pos) {
  double sum = 0;
  for (int c = 0; c < 3; ++c) sum += std::exp(kScores[sample * 6 + c * 2 + pos]);
  const int label = static_cast<int>(kLabels[sample * 2 + pos]);
  return -(kScores[sample * 6 + label * 2 + pos] - std::log(sum));
}

float SpatialLoss(const std::string& loss_param) {
  LayerFixture f("type: 'SoftmaxWithLoss' " + loss_param, {{2, 3, 2}, {2, 2}});
  std::copy(kScores, kScores + 12, f.bottom(0).data());
  std::copy(kLabels, kLabels + 4, f.bottom(1).data());
  return f.Forward();
}

}  // namespace

TEST(SoftmaxWithLoss, ForwardMatchesHandComputedValues) {
  LayerFixture f("type: 'SoftmaxWithLoss'", {{2, 3}, {2}});
  const float scores[] = {1, 2, 3, 0, 0, 0};
  std::copy(scores, scores + 6, f.bottom(0).data());
  f.bottom(1).data()[0] = 2;
  f.bottom(1).data()[1] = 0;
  // (−log 0.66524096 − log(1/3)) / 2 = (0.40760596 + 1.09861229) / 2.
  EXPECT_NEAR(f.Forward(), 0.75310912f, 1e-6f);
  EXPECT_NEAR(f.top(0).data()[0], 0.75310912f, 1e-6f);
}

TEST(SoftmaxWithLoss, VanishingProbabilityIsClampedToFltMin) {
  LayerFixture f("type: 'SoftmaxWithLoss'", {{1, 2}, {1}});
  f.bottom(0).data()[0] = -200.0f;  // p = e^−400 underflows to 0
  f.bottom(0).data()[1] = 200.0f;
  f.bottom(1).data()[0] = 0;
  EXPECT_NEAR(f.Forward(), 87.336544f, 1e-4f);  // −log(FLT_MIN)
}

TEST(SoftmaxWithLoss, NormalizationModes) {
  const double total = Nll(0, 0) + Nll(0, 1) + Nll(1, 0) + Nll(1, 1);
  const double valid2 = Nll(0, 0) + Nll(1, 0);
  EXPECT_NEAR(SpatialLoss(""), total / 4, 1e-5);
  EXPECT_NEAR(SpatialLoss("loss_param { normalization: VALID }"), total / 4, 1e-5);
  EXPECT_NEAR(SpatialLoss("loss_param { normalization: FULL }"), total / 4, 1e-5);
  EXPECT_NEAR(SpatialLoss("loss_param { normalization: BATCH_SIZE }"), total / 2, 1e-5);
  EXPECT_NEAR(SpatialLoss("loss_param { normalization: NONE }"), total, 1e-5);
  EXPECT_NEAR(SpatialLoss("loss_param { normalize: false }"), total / 2, 1e-5);
  EXPECT_NEAR(SpatialLoss("loss_param { normalize: true }"), total / 4, 1e-5);
  // With label 1 ignored, positions (0, 0) and (1, 0) remain.
  const std::string ig = "loss_param { ignore_label: 1 ";
  EXPECT_NEAR(SpatialLoss(ig + "}"), valid2 / 2, 1e-5);
  EXPECT_NEAR(SpatialLoss(ig + "normalization: FULL }"), valid2 / 4, 1e-5);
  EXPECT_NEAR(SpatialLoss(ig + "normalization: BATCH_SIZE }"), valid2 / 2, 1e-5);
  EXPECT_NEAR(SpatialLoss(ig + "normalization: NONE }"), valid2, 1e-5);
}

TEST(SoftmaxWithLoss, AllIgnoredGivesZeroLoss) {
  LayerFixture f("type: 'SoftmaxWithLoss' loss_param { ignore_label: 0 }", {{2, 3}, {2}});
  f.FillBottoms();
  f.bottom(1).data()[0] = 0;
  f.bottom(1).data()[1] = 0;
  EXPECT_EQ(f.Forward(), 0.0f);
  f.Backward();
  for (int i = 0; i < 6; ++i) EXPECT_EQ(f.bottom(0).diff()[i], 0.0f);
}

TEST(SoftmaxWithLoss, BackwardMatchesHandComputedValues) {
  // Loss weight 2, FULL normalization over 2 positions: dx = (p − onehot) · 2 / 2.
  LayerFixture f("type: 'SoftmaxWithLoss' loss_weight: 2 loss_param { normalization: FULL }",
                 {{2, 3}, {2}});
  const float scores[] = {1, 2, 3, 0, 0, 0};
  std::copy(scores, scores + 6, f.bottom(0).data());
  f.bottom(1).data()[0] = 2;
  f.bottom(1).data()[1] = 0;
  f.bottom(1).diff()[0] = f.bottom(1).diff()[1] = 42.0f;  // labels never get a gradient
  EXPECT_NEAR(f.Forward(), 2 * 0.75310912f, 1e-6f);
  f.Backward();
  const float expected[] = {0.09003057f, 0.24472847f, 0.66524096f - 1,
                            1 / 3.0f - 1, 1 / 3.0f,    1 / 3.0f};
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(f.bottom(0).diff()[i], expected[i], 1e-6f) << i;
  EXPECT_EQ(f.bottom(1).diff()[0], 42.0f);
  EXPECT_EQ(f.bottom(1).diff()[1], 42.0f);
}

TEST(SoftmaxWithLoss, IgnoredLabelGetsNoGradient) {
  LayerFixture f("type: 'SoftmaxWithLoss' loss_param { ignore_label: 1 }", {{2, 3, 2}, {2, 2}});
  std::copy(kScores, kScores + 12, f.bottom(0).data());
  std::copy(kLabels, kLabels + 4, f.bottom(1).data());
  f.Forward();
  f.Backward();
  // Positions (sample 0, pos 1) and (sample 1, pos 1) carry label 1.
  for (int s = 0; s < 2; ++s)
    for (int c = 0; c < 3; ++c) {
      EXPECT_EQ(f.bottom(0).diff()[s * 6 + c * 2 + 1], 0.0f);
      EXPECT_NE(f.bottom(0).diff()[s * 6 + c * 2 + 0], 0.0f);
    }
}

TEST(SoftmaxWithLoss, SecondTopHoldsProbabilities) {
  LayerFixture f("type: 'SoftmaxWithLoss'", {{2, 3}, {2}}, 2);
  const float scores[] = {1, 2, 3, 0, 0, 0};
  std::copy(scores, scores + 6, f.bottom(0).data());
  f.bottom(1).data()[0] = 2;
  f.bottom(1).data()[1] = 0;
  EXPECT_NEAR(f.Forward(), 0.75310912f, 1e-6f);
  ASSERT_EQ(f.top(1).shape(), (std::vector<int>{2, 3}));
  const float expected[] = {0.09003057f, 0.24472847f, 0.66524096f, 1 / 3.0f, 1 / 3.0f, 1 / 3.0f};
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(f.top(1).data()[i], expected[i], 1e-6f);
}

TEST(SoftmaxWithLoss, ReportsInnerScratchBuffers) {
  LayerFixture one("type: 'SoftmaxWithLoss'", {{2, 3}, {2}});
  EXPECT_EQ(one.layer().scratch_buffers().size(), 2u);  // probabilities + the softmax's own
  LayerFixture two("type: 'SoftmaxWithLoss'", {{2, 3}, {2}}, 2);
  EXPECT_EQ(two.layer().scratch_buffers().size(), 1u);
}

TEST(SoftmaxWithLoss, LabelOutOfRangeIsAnError) {
  LayerFixture f("name: 'loss' type: 'SoftmaxWithLoss'", {{2, 3}, {2}});
  f.FillBottoms();
  f.bottom(1).data()[0] = 1;
  f.bottom(1).data()[1] = 3;
  try {
    f.Forward();
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("layer loss (SoftmaxWithLoss)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("label 3"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[0, 3)"), std::string::npos) << msg;
  }
  f.bottom(1).data()[1] = -1;
  EXPECT_THROW(f.Forward(), Error);
}

TEST(SoftmaxWithLoss, NegativeIgnoreLabelIsAccepted) {
  LayerFixture f("type: 'SoftmaxWithLoss' loss_param { ignore_label: -1 }", {{2, 3}, {2}});
  f.FillBottoms();
  f.bottom(1).data()[0] = -1;
  f.bottom(1).data()[1] = 2;
  EXPECT_NO_THROW(f.Forward());
}

TEST(SoftmaxWithLoss, LabelCountMismatchIsAnError) {
  EXPECT_THROW(LayerFixture("type: 'SoftmaxWithLoss'", {{2, 3, 2}, {2}}), Error);
}

TEST(SoftmaxWithLoss, GradientCheck) {
  LayerFixture f("type: 'SoftmaxWithLoss'", {{2, 4, 2}, {2, 2}});
  f.FillBottoms(2.0f);
  const float labels[] = {0, 3, 2, 1};
  std::copy(labels, labels + 4, f.bottom(1).data());
  GradientCheckOptions o;
  o.skip_bottoms = {1};
  CheckGradient(f, o);
}

TEST(SoftmaxWithLoss, GradientCheckIgnoreLabelAndWeight) {
  LayerFixture f("type: 'SoftmaxWithLoss' loss_weight: 3 loss_param { ignore_label: 1 "
                 "normalization: BATCH_SIZE }",
                 {{2, 4, 2}, {2, 2}});
  f.FillBottoms(2.0f);
  const float labels[] = {0, 1, 2, 1};
  std::copy(labels, labels + 4, f.bottom(1).data());
  GradientCheckOptions o;
  o.skip_bottoms = {1};
  CheckGradient(f, o);
}

TEST(SoftmaxWithLoss, GradientCheckLastAxis) {
  LayerFixture f("type: 'SoftmaxWithLoss' softmax_param { axis: -1 }", {{2, 2, 3}, {2, 2}});
  f.FillBottoms(2.0f);
  const float labels[] = {0, 2, 1, 2};
  std::copy(labels, labels + 4, f.bottom(1).data());
  GradientCheckOptions o;
  o.skip_bottoms = {1};
  CheckGradient(f, o);
}

}  // namespace cortado::test
