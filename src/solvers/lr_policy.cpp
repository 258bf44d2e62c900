// lr_policy.cpp — the learning-rate schedule: Caffe's seven lr_policy values as pure functions of
// the iteration, with the fields each one needs checked by name.
#include <glog/logging.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "cortado/error.hpp"          // Fail, CORTADO_REQUIRE
#include "cortado/update_rules.hpp"   // LearningRate, CurrentStep

namespace cortado {

namespace {

constexpr const char* kKnownPolicies = "fixed, step, exp, inv, multistep, poly, sigmoid";

// Throws unless the policy is known and every field its formula uses is set and sensible.
void CheckPolicy(const SolverParameter& p) {
  const std::string& policy = p.lr_policy();
  CORTADO_REQUIRE(p.has_lr_policy(), "solver: lr_policy is not set (known policies: ",
                  kKnownPolicies, ")");
  const bool uses_gamma = policy == "step" || policy == "exp" || policy == "inv" ||
                          policy == "multistep" || policy == "sigmoid";
  const bool uses_power = policy == "inv" || policy == "poly";
  const bool uses_stepsize = policy == "step" || policy == "sigmoid";
  CORTADO_REQUIRE(uses_gamma || uses_power || policy == "fixed",
                  "solver: unknown lr_policy \"", policy, "\" (known policies: ", kKnownPolicies, ")");
  CORTADO_REQUIRE(p.has_base_lr(), "solver: base_lr is not set");
  const std::string who = "solver: lr_policy \"" + policy + "\" needs ";
  if (uses_gamma) {
    CORTADO_REQUIRE(p.has_gamma(), who, "gamma");
    CORTADO_REQUIRE(p.gamma() >= 0, who, "gamma >= 0 (got ", p.gamma(), ")");
  }
  if (uses_power) CORTADO_REQUIRE(p.has_power(), who, "power");
  if (uses_stepsize) CORTADO_REQUIRE(p.stepsize() > 0, who, "stepsize > 0 (got ", p.stepsize(), ")");
  if (policy == "multistep") CORTADO_REQUIRE(p.stepvalue_size() > 0, who, "at least one stepvalue");
  if (policy == "poly") CORTADO_REQUIRE(p.max_iter() > 0, who, "max_iter > 0 (got ", p.max_iter(), ")");
}

// Caffe's multistep position: asked once per iteration from 0, it moves to the next stepvalue when
// iter >= stepvalue(step), at most one per iteration. Returns the position at `iter` and, through
// advanced_at, the iteration of the last move (−1 if none).
int MultiStepPosition(const SolverParameter& p, int iter, int64_t* advanced_at) {
  int step = 0;
  int64_t last = -1;
  for (; step < p.stepvalue_size(); ++step) {
    const int64_t at = std::max<int64_t>(p.stepvalue(step), last + 1);
    if (at > iter) break;
    last = at;
  }
  *advanced_at = last;
  return step;
}

}  // namespace

int CurrentStep(const SolverParameter& param, int iter) {
  CheckPolicy(param);
  if (param.lr_policy() == "step") return iter / param.stepsize();
  if (param.lr_policy() == "multistep") {
    int64_t advanced_at;
    return MultiStepPosition(param, iter, &advanced_at);
  }
  return 0;
}

float LearningRate(const SolverParameter& param, int iter) {
  CheckPolicy(param);
  const std::string& policy = param.lr_policy();
  const double base = param.base_lr(), gamma = param.gamma(), power = param.power();
  const double it = iter;
  double rate = base;  // fixed
  if (policy == "step") {
    rate = base * std::pow(gamma, iter / param.stepsize());
  } else if (policy == "exp") {
    rate = base * std::pow(gamma, it);
  } else if (policy == "inv") {
    rate = base * std::pow(1.0 + gamma * it, -power);
  } else if (policy == "multistep") {
    int64_t advanced_at;
    const int step = MultiStepPosition(param, iter, &advanced_at);
    if (advanced_at == iter) LOG(INFO) << "MultiStep Status: Iteration " << iter << ", step = " << step;
    rate = base * std::pow(gamma, step);
  } else if (policy == "poly") {
    rate = base * std::pow(1.0 - it / param.max_iter(), power);
  } else if (policy == "sigmoid") {
    rate = base / (1.0 + std::exp(-gamma * (it - param.stepsize())));
  }
  return static_cast<float>(rate);
}

}  // namespace cortado
