// update_rules_test.cpp — three steps of every update rule on a small flat buffer (two segments with
// different lr_mult and decay_mult, and a gap between them that nothing may touch) against a scalar
// double-precision implementation of the formulas written here; weight decay, clipping, the factory
// and its errors; every example solver in models/ builds.
#include <google/protobuf/text_format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "cortado/error.hpp"
#include "cortado/update_rules.hpp"
#include "test_util.hpp"

namespace cortado::test {
namespace {

// Nine floats: segment A = [0, 4) with lr_mult 1, decay_mult 1; element 4 is a gap; segment B =
// [5, 8) with lr_mult 2.5, decay_mult 0.5; element 8 is a gap.
constexpr int kCount = 9;
const std::vector<ParamSegment> kSegments = {{0, 4, 1.0f, 1.0f}, {5, 3, 2.5f, 0.5f}};
constexpr float kGap = 123.0f;

bool InSegment(int i) { return (i >= 0 && i < 4) || (i >= 5 && i < 8); }
double LrMult(int i) { return i < 4 ? 1.0 : 2.5; }
double DecayMult(int i) { return i < 4 ? 1.0 : 0.5; }

float InitialWeight(int i) { return 0.3f * std::sin(1.7f * i + 0.4f) + (i == 2 ? -0.6f : 0.1f); }
// A gradient sequence with mixed signs and scales, different at every step.
float Gradient(int step, int i) {
  return (0.5f + 0.7f * step) * std::cos(2.3f * i - 1.1f * step) + (i % 3 == 0 ? 0.05f : -0.2f);
}

// The scalar reference: one element's state under one rule, in double.
struct RefState {
  double w = 0, h = 0, s = 0, u = 0;
};

void RefStep(const std::string& type, const SolverParameter& p, RefState* r, double g, double alpha,
             int iter) {
  const double mu = p.momentum(), delta = p.delta();
  double u = 0;
  if (type == "SGD") {
    r->h = mu * r->h + alpha * g;
    u = r->h;
  } else if (type == "Nesterov") {
    const double prev = r->h;
    r->h = mu * prev + alpha * g;
    u = (1 + mu) * r->h - mu * prev;
  } else if (type == "AdaGrad") {
    r->h += g * g;
    u = alpha * g / (std::sqrt(r->h) + delta);
  } else if (type == "RMSProp") {
    const double rho = p.rms_decay();
    r->h = rho * r->h + (1 - rho) * g * g;
    u = alpha * g / (std::sqrt(r->h) + delta);
  } else if (type == "AdaDelta") {
    r->h = mu * r->h + (1 - mu) * g * g;
    const double d = g * std::sqrt((r->s + delta) / (r->h + delta));
    r->s = mu * r->s + (1 - mu) * d * d;
    u = alpha * d;
  } else if (type == "Adam") {
    const double b1 = p.momentum(), b2 = p.momentum2(), t = iter + 1;
    r->h = b1 * r->h + (1 - b1) * g;      // m
    r->s = b2 * r->s + (1 - b2) * g * g;  // v
    u = alpha * std::sqrt(1 - std::pow(b2, t)) / (1 - std::pow(b1, t)) * r->h /
        (std::sqrt(r->s) + delta);
  } else {
    ADD_FAILURE() << "no reference for " << type;
  }
  r->w -= u;
  r->u = u;
}

void ExpectClose(float actual, double expected, const std::string& what) {
  EXPECT_NEAR(actual, expected, 2e-5 * std::fabs(expected) + 1e-7) << what;
}

// Three Apply calls against the reference, checking weights, the update left in diff and history.
void CheckRule(const std::string& type, const std::string& extra, int first_iter) {
  SCOPED_TRACE(type + " " + extra);
  const SolverParameter p = ParseSolver("type: '" + type + "' " + extra);
  const std::unique_ptr<UpdateRule> rule = UpdateRule::Create(p);
  ASSERT_STREQ(rule->type(), type.c_str());
  std::vector<float> data(kCount), diff(kCount, kGap), hist(kCount * rule->num_history(), kGap);
  std::vector<float*> history;
  for (int k = 0; k < rule->num_history(); ++k) history.push_back(hist.data() + k * kCount);
  std::vector<RefState> ref(kCount);
  for (int i = 0; i < kCount; ++i) {
    data[i] = InSegment(i) ? InitialWeight(i) : kGap;
    ref[i].w = data[i];
    if (InSegment(i))
      for (float* h : history) h[i] = 0.0f;
  }
  FlatParams flat{data.data(), diff.data(), kCount, kSegments};
  const float rates[] = {0.1f, 0.05f, 0.02f};
  for (int step = 0; step < 3; ++step) {
    const int iter = first_iter + step;
    for (int i = 0; i < kCount; ++i)
      if (InSegment(i)) diff[i] = Gradient(step, i);
    rule->Apply(flat, history, rates[step], iter);
    for (int i = 0; i < kCount; ++i) {
      const std::string where = "step " + std::to_string(step) + " element " + std::to_string(i);
      if (!InSegment(i)) {
        EXPECT_EQ(data[i], kGap) << where;
        EXPECT_EQ(diff[i], kGap) << where;
        for (float* h : history) EXPECT_EQ(h[i], kGap) << where;
        continue;
      }
      RefStep(type, p, &ref[i], Gradient(step, i), double{rates[step]} * LrMult(i), iter);
      ExpectClose(data[i], ref[i].w, "weight, " + where);
      ExpectClose(diff[i], ref[i].u, "update in diff, " + where);
      ExpectClose(history[0][i], ref[i].h, "history 0, " + where);
      if (rule->num_history() > 1) ExpectClose(history[1][i], ref[i].s, "history 1, " + where);
    }
  }
}

TEST(UpdateRuleTest, SGD) { CheckRule("SGD", "momentum: 0.9", 0); }
TEST(UpdateRuleTest, SGDWithoutMomentum) { CheckRule("SGD", "", 0); }
TEST(UpdateRuleTest, Nesterov) { CheckRule("Nesterov", "momentum: 0.95", 0); }
TEST(UpdateRuleTest, AdaGrad) { CheckRule("AdaGrad", "delta: 1e-6", 0); }
TEST(UpdateRuleTest, RMSProp) { CheckRule("RMSProp", "rms_decay: 0.98 delta: 1e-6", 0); }
TEST(UpdateRuleTest, AdaDelta) { CheckRule("AdaDelta", "momentum: 0.95 delta: 1e-6", 0); }
TEST(UpdateRuleTest, Adam) { CheckRule("Adam", "momentum: 0.9 momentum2: 0.999", 0); }
TEST(UpdateRuleTest, AdamBiasCorrectionFollowsIter) { CheckRule("Adam", "momentum: 0.8 momentum2: 0.99", 7); }

TEST(UpdateRuleTest, HistoryCounts) {
  const struct { const char* type; int n; } cases[] = {{"SGD", 1},     {"Nesterov", 1}, {"AdaGrad", 1},
                                                       {"RMSProp", 1}, {"AdaDelta", 2}, {"Adam", 2}};
  for (const auto& c : cases)
    EXPECT_EQ(UpdateRule::Create(ParseSolver(std::string("type: '") + c.type + "'"))->num_history(), c.n);
}

TEST(UpdateRuleTest, DeprecatedSolverTypeEnum) {
  const struct { const char* name; const char* type; } cases[] = {
      {"SGD", "SGD"},         {"NESTEROV", "Nesterov"}, {"ADAGRAD", "AdaGrad"},
      {"RMSPROP", "RMSProp"}, {"ADADELTA", "AdaDelta"}, {"ADAM", "Adam"}};
  for (const auto& c : cases)
    EXPECT_STREQ(UpdateRule::Create(ParseSolver(std::string("solver_type: ") + c.name))->type(), c.type);
  EXPECT_STREQ(UpdateRule::Create(ParseSolver(""))->type(), "SGD");
  EXPECT_NE(ErrorOf([] { UpdateRule::Create(ParseSolver("type: 'Adam' solver_type: ADAM")); })
                .find("solver_type"),
            std::string::npos);
}

TEST(UpdateRuleTest, Errors) {
  const std::string unknown = ErrorOf([] { UpdateRule::Create(ParseSolver("type: 'adam'")); });
  EXPECT_NE(unknown.find("\"adam\""), std::string::npos) << unknown;
  for (const char* known : {"SGD", "Nesterov", "AdaGrad", "RMSProp", "AdaDelta", "Adam"})
    EXPECT_NE(unknown.find(known), std::string::npos) << unknown;
  const struct { const char* text; const char* what; } cases[] = {
      {"type: 'AdaGrad' momentum: 0.9", "momentum"},
      {"type: 'RMSProp' momentum: 0.9", "momentum"},
      {"type: 'RMSProp' rms_decay: 1.0", "rms_decay"},
      {"type: 'RMSProp' rms_decay: -0.1", "rms_decay"},
      {"type: 'Adam' momentum: 1.0", "momentum (beta1)"},
      {"type: 'Adam' momentum2: 1.5", "momentum2"},
  };
  for (const auto& c : cases) {
    const std::string msg = ErrorOf([&] { UpdateRule::Create(ParseSolver(c.text)); });
    EXPECT_NE(msg.find(c.what), std::string::npos) << c.text << " -> " << msg;
  }
}

// ---- weight decay and clipping -------------------------------------------------------------------

struct Buffers {
  std::vector<float> data, diff;
  FlatParams flat;
  Buffers() : data(kCount), diff(kCount) {
    for (int i = 0; i < kCount; ++i) {
      data[i] = InSegment(i) ? InitialWeight(i) : kGap;
      diff[i] = InSegment(i) ? Gradient(1, i) : kGap;
    }
    data[6] = 0.0f;  // sign(0) = 0 under L1
    flat = FlatParams{data.data(), diff.data(), kCount, kSegments};
  }
};

TEST(RegularizeTest, L2) {
  Buffers b;
  Regularize(b.flat, ParseSolver("weight_decay: 0.01"));
  for (int i = 0; i < kCount; ++i) {
    const double expected =
        InSegment(i) ? Gradient(1, i) + double{0.01f} * DecayMult(i) * b.data[i] : kGap;
    EXPECT_NEAR(b.diff[i], expected, 1e-6) << i;
  }
}

TEST(RegularizeTest, L1) {
  Buffers b;
  Regularize(b.flat, ParseSolver("weight_decay: 0.01 regularization_type: 'L1'"));
  for (int i = 0; i < kCount; ++i) {
    const double sign = b.data[i] > 0 ? 1 : (b.data[i] < 0 ? -1 : 0);
    const double expected = InSegment(i) ? Gradient(1, i) + double{0.01f} * DecayMult(i) * sign : kGap;
    EXPECT_NEAR(b.diff[i], expected, 1e-6) << i;
  }
  EXPECT_EQ(b.diff[6], Gradient(1, 6));  // weight 0: no decay
}

TEST(RegularizeTest, ZeroDecayAndUnknownType) {
  Buffers b;
  const std::vector<float> before = b.diff;
  Regularize(b.flat, ParseSolver("weight_decay: 0"));
  EXPECT_EQ(b.diff, before);
  const std::string msg =
      ErrorOf([&] { Regularize(b.flat, ParseSolver("weight_decay: 0.1 regularization_type: 'L3'")); });
  EXPECT_NE(msg.find("\"L3\""), std::string::npos) << msg;
  EXPECT_NE(msg.find("L1"), std::string::npos) << msg;
}

double SegmentNorm(const std::vector<float>& g) {
  double sum = 0;
  for (int i = 0; i < kCount; ++i)
    if (InSegment(i)) sum += double{g[i]} * g[i];
  return std::sqrt(sum);
}

TEST(ClipGradientsTest, ScalesTheGlobalNormToClip) {
  Buffers b;
  const std::vector<float> before = b.diff;
  const double norm = SegmentNorm(before);
  ASSERT_GT(norm, 1.0);
  EXPECT_NEAR(ClipGradients(b.flat, 1.0f), norm, 1e-6 * norm);
  EXPECT_NEAR(SegmentNorm(b.diff), 1.0, 1e-6);
  for (int i = 0; i < kCount; ++i) {
    if (InSegment(i)) {
      EXPECT_NEAR(b.diff[i], before[i] / norm, 1e-6) << i;  // same direction
    } else {
      EXPECT_EQ(b.diff[i], kGap) << i;  // gaps are neither counted nor scaled
    }
  }
}

TEST(ClipGradientsTest, LongBufferNorm) {
  // Long enough to use the blocked sum: 10000 + 37 elements of 0.01 and one outlier.
  std::vector<float> data(10038, 0.0f), diff(10038, 0.01f);
  diff[777] = 3.0f;
  FlatParams flat{data.data(), diff.data(), 10038, {{1, 10037, 1.0f, 1.0f}}};
  const double small = 0.01f;  // as stored
  const double norm = std::sqrt(10036 * small * small + 9.0);
  EXPECT_NEAR(ClipGradients(flat, 2.0f), norm, 1e-6 * norm);
  double sum = 0;
  for (int i = 1; i < 10038; ++i) sum += double{diff[i]} * diff[i];
  EXPECT_NEAR(std::sqrt(sum), 2.0, 2e-6);
  EXPECT_EQ(diff[0], 0.01f);
}

TEST(ClipGradientsTest, SmallNormOrDisabledLeavesGradients) {
  Buffers b;
  const std::vector<float> before = b.diff;
  const double norm = SegmentNorm(before);
  EXPECT_NEAR(ClipGradients(b.flat, 100.0f), norm, 1e-6 * norm);
  EXPECT_EQ(b.diff, before);
  EXPECT_EQ(ClipGradients(b.flat, -1.0f), -1.0f);
  EXPECT_EQ(b.diff, before);
}

// Every example solver shipped in models/ parses, builds its rule and has a valid schedule.
TEST(UpdateRuleTest, ExampleSolversBuild) {
  int found = 0;
  for (const auto& entry : std::filesystem::directory_iterator(SourceDir() + "/models/mnist")) {
    const std::string path = entry.path().string();
    if (path.find("solver") == std::string::npos || entry.path().extension() != ".prototxt") continue;
    ++found;
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    SolverParameter p;
    ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(text.str(), &p)) << path;
    EXPECT_NO_THROW(UpdateRule::Create(p)) << path;
    EXPECT_NO_THROW(LearningRate(p, 0)) << path;
    EXPECT_GT(LearningRate(p, 0), 0.0f) << path;
  }
  EXPECT_GE(found, 8);
}

}  // namespace
}  // namespace cortado::test
