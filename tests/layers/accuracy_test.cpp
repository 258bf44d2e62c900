// accuracy_test.cpp — Accuracy: top-1 and top-k by hand, Caffe's tie rule, ignore_label, per-class
// output, a spatial class axis, and label errors.
#include "cortado/error.hpp"
#include "test_util.hpp"

namespace cortado::test {

namespace {

// Four samples, three classes.
const float kScores[] = {0.1f, 0.7f, 0.2f,   // best first: 1, 2, 0
                         0.5f, 0.3f, 0.2f,   // best first: 0, 1, 2
                         0.2f, 0.3f, 0.5f,   // best first: 2, 1, 0
                         0.4f, 0.1f, 0.5f};  // best first: 2, 0, 1
const float kLabels[] = {1, 1, 0, 1};

}  // namespace

TEST(Accuracy, Top1MatchesHandComputedValue) {
  LayerFixture f("type: 'Accuracy'", {{4, 3}, {4}});
  std::copy(kScores, kScores + 12, f.bottom(0).data());
  std::copy(kLabels, kLabels + 4, f.bottom(1).data());
  f.Forward();
  EXPECT_EQ(f.top(0).num_axes(), 0);
  // Only sample 0 has its label ranked first.
  EXPECT_FLOAT_EQ(f.top(0).data()[0], 0.25f);
}

TEST(Accuracy, TopKMatchesHandComputedValues) {
  LayerFixture f("type: 'Accuracy' accuracy_param { top_k: 2 }", {{4, 3}, {4}});
  std::copy(kScores, kScores + 12, f.bottom(0).data());
  std::copy(kLabels, kLabels + 4, f.bottom(1).data());
  f.Forward();
  // Labels within the top 2: samples 0 and 1; sample 2 (label 0, ranked last) and 3 are misses.
  EXPECT_FLOAT_EQ(f.top(0).data()[0], 0.5f);
  LayerFixture g("type: 'Accuracy' accuracy_param { top_k: 3 }", {{4, 3}, {4}});
  std::copy(kScores, kScores + 12, g.bottom(0).data());
  std::copy(kLabels, kLabels + 4, g.bottom(1).data());
  g.Forward();
  EXPECT_FLOAT_EQ(g.top(0).data()[0], 1.0f);
}

TEST(Accuracy, TiesCountAgainstThePrediction) {
  // Caffe's rule: correct when fewer than top_k other classes score >= the true class.
  LayerFixture f("type: 'Accuracy'", {{2, 3}, {2}});
  const float scores[] = {2, 2, 0, 1, 3, 3};
  std::copy(scores, scores + 6, f.bottom(0).data());
  f.bottom(1).data()[0] = 0;  // tied with class 1 for first place
  f.bottom(1).data()[1] = 2;  // tied with class 1 for first place
  f.Forward();
  EXPECT_FLOAT_EQ(f.top(0).data()[0], 0.0f);
  LayerFixture g("type: 'Accuracy' accuracy_param { top_k: 2 }", {{2, 3}, {2}});
  std::copy(scores, scores + 6, g.bottom(0).data());
  g.bottom(1).data()[0] = 0;
  g.bottom(1).data()[1] = 2;
  g.Forward();
  EXPECT_FLOAT_EQ(g.top(0).data()[0], 1.0f);
}

TEST(Accuracy, IgnoreLabelIsSkipped) {
  LayerFixture f("type: 'Accuracy' accuracy_param { ignore_label: 1 }", {{4, 3}, {4}});
  std::copy(kScores, kScores + 12, f.bottom(0).data());
  std::copy(kLabels, kLabels + 4, f.bottom(1).data());
  f.Forward();
  // Only sample 2 (label 0, a miss) counts.
  EXPECT_FLOAT_EQ(f.top(0).data()[0], 0.0f);
  LayerFixture g("type: 'Accuracy' accuracy_param { ignore_label: 0 }", {{4, 3}, {4}});
  std::copy(kScores, kScores + 12, g.bottom(0).data());
  std::copy(kLabels, kLabels + 4, g.bottom(1).data());
  g.Forward();
  EXPECT_FLOAT_EQ(g.top(0).data()[0], 1.0f / 3.0f);
}

TEST(Accuracy, PerClassOutput) {
  LayerFixture f("type: 'Accuracy' accuracy_param { top_k: 2 }", {{4, 3}, {4}}, 2);
  std::copy(kScores, kScores + 12, f.bottom(0).data());
  std::copy(kLabels, kLabels + 4, f.bottom(1).data());
  f.Forward();
  ASSERT_EQ(f.top(1).shape(), std::vector<int>{3});
  EXPECT_FLOAT_EQ(f.top(0).data()[0], 0.5f);
  EXPECT_FLOAT_EQ(f.top(1).data()[0], 0.0f);         // class 0: sample 2 missed
  EXPECT_FLOAT_EQ(f.top(1).data()[1], 2.0f / 3.0f);  // class 1: samples 0, 1 hit, 3 missed
  EXPECT_FLOAT_EQ(f.top(1).data()[2], 0.0f);         // class 2: no samples
  // A second forward starts from zero again.
  f.Forward();
  EXPECT_FLOAT_EQ(f.top(1).data()[1], 2.0f / 3.0f);
}

TEST(Accuracy, SpatialClassAxis) {
  // Scores (1 × 3 × 2): class axis 1, two positions.
  LayerFixture f("type: 'Accuracy'", {{1, 3, 2}, {1, 2}});
  const float scores[] = {0.1f, 0.9f, 0.8f, 0.05f, 0.1f, 0.05f};
  std::copy(scores, scores + 6, f.bottom(0).data());
  f.bottom(1).data()[0] = 1;  // position 0: class 1 scores 0.8, the best — hit
  f.bottom(1).data()[1] = 2;  // position 1: class 0 scores 0.9 — miss
  f.Forward();
  EXPECT_FLOAT_EQ(f.top(0).data()[0], 0.5f);
}

TEST(Accuracy, LastAxis) {
  LayerFixture f("type: 'Accuracy' accuracy_param { axis: -1 }", {{2, 1, 3}, {2, 1}});
  const float scores[] = {0.1f, 0.9f, 0.0f, 0.3f, 0.2f, 0.1f};
  std::copy(scores, scores + 6, f.bottom(0).data());
  f.bottom(1).data()[0] = 1;
  f.bottom(1).data()[1] = 1;
  f.Forward();
  EXPECT_FLOAT_EQ(f.top(0).data()[0], 0.5f);
}

TEST(Accuracy, LabelErrors) {
  LayerFixture f("name: 'acc' type: 'Accuracy'", {{2, 3}, {2}});
  f.FillBottoms();
  f.bottom(1).data()[0] = 0;
  f.bottom(1).data()[1] = 5;
  try {
    f.Forward();
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("layer acc (Accuracy)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("label 5"), std::string::npos) << msg;
  }
  EXPECT_THROW(LayerFixture("type: 'Accuracy'", {{2, 3}, {3}}), Error);
  EXPECT_THROW(LayerFixture("type: 'Accuracy' accuracy_param { top_k: 4 }", {{2, 3}, {2}}), Error);
}

TEST(Accuracy, BackwardDoesNothing) {
  LayerFixture f("type: 'Accuracy'", {{2, 3}, {2}});
  f.FillBottoms();
  f.bottom(1).data()[0] = 0;
  f.bottom(1).data()[1] = 1;
  f.bottom(0).diff()[0] = 7.0f;
  f.Forward();
  f.Backward();  // propagate_down true for both: not an error
  EXPECT_EQ(f.bottom(0).diff()[0], 7.0f);
  EXPECT_FALSE(f.layer().AllowForceBackward(0));
}

}  // namespace cortado::test
