// lr_policy_test.cpp — every lr_policy against its formula (computed here in double), multistep's
// boundaries against a replay of Caffe's stateful rule, and the errors for bad or missing fields.
#include <google/protobuf/text_format.h>

#include <cmath>
#include <functional>
#include <string>

#include "cortado/error.hpp"
#include "cortado/update_rules.hpp"
#include "test_util.hpp"

namespace cortado::test {
namespace {

void ExpectRate(const SolverParameter& p, int iter, double expected) {
  EXPECT_NEAR(LearningRate(p, iter), expected, 1e-6 * std::fabs(expected) + 1e-12)
      << p.lr_policy() << " at iter " << iter;
}

const int kIters[] = {0, 1, 99, 100, 101, 250, 1000, 4321};

TEST(LrPolicyTest, Fixed) {
  const SolverParameter p = ParseSolver("base_lr: 0.01 lr_policy: 'fixed'");
  for (int it : kIters) ExpectRate(p, it, double{0.01f});
}

TEST(LrPolicyTest, Step) {
  const SolverParameter p = ParseSolver("base_lr: 0.01 lr_policy: 'step' gamma: 0.1 stepsize: 100");
  const double base = p.base_lr(), gamma = p.gamma();
  for (int it : kIters) ExpectRate(p, it, base * std::pow(gamma, std::floor(it / 100.0)));
  EXPECT_FLOAT_EQ(LearningRate(p, 99), 0.01f);
  EXPECT_FLOAT_EQ(LearningRate(p, 100), 0.001f);
  EXPECT_EQ(CurrentStep(p, 99), 0);
  EXPECT_EQ(CurrentStep(p, 250), 2);
}

TEST(LrPolicyTest, Exp) {
  const SolverParameter p = ParseSolver("base_lr: 0.1 lr_policy: 'exp' gamma: 0.999");
  const double base = p.base_lr(), gamma = p.gamma();
  for (int it : kIters) ExpectRate(p, it, base * std::pow(gamma, it));
}

TEST(LrPolicyTest, Inv) {
  const SolverParameter p =
      ParseSolver("base_lr: 0.01 lr_policy: 'inv' gamma: 0.0001 power: 0.75");  // LeNet's schedule
  const double base = p.base_lr(), gamma = p.gamma(), power = p.power();
  for (int it : kIters) ExpectRate(p, it, base * std::pow(1 + gamma * it, -power));
  EXPECT_NEAR(LearningRate(p, 100), 0.00992565, 5e-9);  // Caffe's log: "Iteration 100, lr = 0.00992565"
}

TEST(LrPolicyTest, Poly) {
  const SolverParameter p = ParseSolver("base_lr: 0.01 lr_policy: 'poly' power: 0.5 max_iter: 5000");
  const double base = p.base_lr(), power = p.power();
  for (int it : kIters) ExpectRate(p, it, base * std::pow(1 - it / 5000.0, power));
  EXPECT_EQ(LearningRate(p, 5000), 0.0f);
}

TEST(LrPolicyTest, Sigmoid) {
  const SolverParameter p = ParseSolver("base_lr: 0.01 lr_policy: 'sigmoid' gamma: 0.05 stepsize: 200");
  const double base = p.base_lr(), gamma = p.gamma();
  for (int it : kIters) ExpectRate(p, it, base / (1 + std::exp(-gamma * (it - 200.0))));
  EXPECT_FLOAT_EQ(LearningRate(p, 200), 0.005f);
}

TEST(LrPolicyTest, MultistepBoundaries) {
  const SolverParameter p = ParseSolver(
      "base_lr: 0.01 lr_policy: 'multistep' gamma: 0.9 "
      "stepvalue: 5000 stepvalue: 7000 stepvalue: 8000 stepvalue: 9000 stepvalue: 9500");
  const double base = p.base_lr(), gamma = p.gamma();
  const struct { int iter, step; } cases[] = {{0, 0},    {4999, 0}, {5000, 1}, {5001, 1}, {6999, 1},
                                              {7000, 2}, {7999, 2}, {8000, 3}, {9000, 4}, {9499, 4},
                                              {9500, 5}, {20000, 5}};
  for (const auto& c : cases) {
    EXPECT_EQ(CurrentStep(p, c.iter), c.step) << "iter " << c.iter;
    ExpectRate(p, c.iter, base * std::pow(gamma, c.step));
  }
}

// Caffe keeps current_step as state and advances it by at most one per iteration, while
// iter >= stepvalue(current_step); repeated or unsorted stepvalues show the difference from a count.
TEST(LrPolicyTest, MultistepReplaysCaffesStatefulRule) {
  const SolverParameter p = ParseSolver(
      "base_lr: 1 lr_policy: 'multistep' gamma: 0.5 "
      "stepvalue: 3 stepvalue: 3 stepvalue: 10 stepvalue: 6 stepvalue: 12 stepvalue: 30");
  int state = 0;
  for (int iter = 0; iter < 40; ++iter) {
    if (state < p.stepvalue_size() && iter >= p.stepvalue(state)) ++state;
    ASSERT_EQ(CurrentStep(p, iter), state) << "iter " << iter;
    ExpectRate(p, iter, std::pow(0.5, state));
  }
  EXPECT_EQ(CurrentStep(p, 3), 1);  // the repeated 3 takes effect one iteration later
  EXPECT_EQ(CurrentStep(p, 4), 2);
  EXPECT_EQ(CurrentStep(p, 10), 3);
  EXPECT_EQ(CurrentStep(p, 11), 4);  // 6 is passed only after 10
}

TEST(LrPolicyTest, CurrentStepIsZeroForOtherPolicies) {
  EXPECT_EQ(CurrentStep(ParseSolver("base_lr: 1 lr_policy: 'fixed'"), 500), 0);
  EXPECT_EQ(CurrentStep(ParseSolver("base_lr: 1 lr_policy: 'inv' gamma: 0.1 power: 1"), 500), 0);
}

TEST(LrPolicyTest, UnknownPolicyListsTheKnownOnes) {
  const std::string msg = ErrorOf([] { LearningRate(ParseSolver("base_lr: 1 lr_policy: 'cosine'"), 0); });
  EXPECT_NE(msg.find("\"cosine\""), std::string::npos) << msg;
  for (const char* known : {"fixed", "step", "exp", "inv", "multistep", "poly", "sigmoid"})
    EXPECT_NE(msg.find(known), std::string::npos) << msg;
  EXPECT_NE(ErrorOf([] { LearningRate(ParseSolver("base_lr: 1"), 0); }).find("lr_policy is not set"),
            std::string::npos);
}

TEST(LrPolicyTest, MissingFieldsAreNamed) {
  const struct { const char* text; const char* field; } cases[] = {
      {"lr_policy: 'fixed'", "base_lr"},
      {"base_lr: 1 lr_policy: 'step' gamma: 0.1", "stepsize"},
      {"base_lr: 1 lr_policy: 'step' gamma: 0.1 stepsize: 0", "stepsize > 0"},
      {"base_lr: 1 lr_policy: 'step' stepsize: 10", "gamma"},
      {"base_lr: 1 lr_policy: 'step' stepsize: 10 gamma: -0.5", "gamma >= 0"},
      {"base_lr: 1 lr_policy: 'exp'", "gamma"},
      {"base_lr: 1 lr_policy: 'inv' gamma: 0.1", "power"},
      {"base_lr: 1 lr_policy: 'inv' power: 0.75", "gamma"},
      {"base_lr: 1 lr_policy: 'multistep' gamma: 0.1", "stepvalue"},
      {"base_lr: 1 lr_policy: 'multistep' stepvalue: 10", "gamma"},
      {"base_lr: 1 lr_policy: 'poly' power: 1", "max_iter"},
      {"base_lr: 1 lr_policy: 'poly' max_iter: 100", "power"},
      {"base_lr: 1 lr_policy: 'sigmoid' gamma: 0.1", "stepsize"},
  };
  for (const auto& c : cases) {
    const SolverParameter p = ParseSolver(c.text);
    const std::string msg = ErrorOf([&] { LearningRate(p, 0); });
    EXPECT_NE(msg.find(c.field), std::string::npos) << c.text << " -> " << msg;
  }
}

}  // namespace
}  // namespace cortado::test
