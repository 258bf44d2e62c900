// update_rules.cpp — the six update rules (SGD, Nesterov, AdaGrad, RMSProp, AdaDelta, Adam), each one
// fused element-wise loop per parameter segment, and the factory that picks one by name. On a GPU
// context ApplyOn hands the rule's constants to its kernel (cuda/update_rules_gpu.cu). The formulas
// (include/cortado/update_rules.hpp) are written once, in update_math.hpp, for both devices.
#include <glog/logging.h>

#include <cmath>
#include <string>

#include "cortado/error.hpp"          // Fail, CORTADO_REQUIRE
#include "cortado/net.hpp"            // FlatParamsOf
#include "cortado/update_rules.hpp"   // UpdateRule, FlatParams
#include "update_math.hpp"            // RuleStep

namespace cortado {

namespace {

// Adam's bias correction √(1−β₂ᵗ)/(1−β₁ᵗ) at t = iter + 1, in double, rounded once.
float AdamCorrection(float beta1, float beta2, int iter) {
  const double t = iter + 1.0;
  return static_cast<float>(std::sqrt(1.0 - std::pow(double{beta2}, t)) / (1.0 - std::pow(double{beta1}, t)));
}

// One segment's update by rule `kind` (update_math.hpp), element by element; h1 is null for the
// one-buffer rules. __restrict: weights, gradients and history are disjoint buffers.
template <UpdateConstants::Kind kind>
void ApplyToSegment(const UpdateConstants& c, int64_t n, float* __restrict w, float* __restrict g,
                    float* __restrict h0, float* __restrict h1, float alpha) {
  float unused = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float u = RuleStep<kind>(c, alpha, c.correction, g[i], h0[i], HasTwoHistories(kind) ? h1[i] : unused);
    g[i] = u;
    w[i] -= u;
  }
}

template <UpdateConstants::Kind kind>
void ApplyToSegments(const UpdateConstants& c, FlatParams& p, const std::vector<float*>& history, float rate) {
  for (const ParamSegment& s : p.segments) {
    CHECK(s.offset >= 0 && s.offset + s.count <= p.count) << "segment outside the flat buffer";
    float* h1 = history.size() > 1 ? history[1] + s.offset : nullptr;
    ApplyToSegment<kind>(c, s.count, p.data + s.offset, p.diff + s.offset, history[0] + s.offset, h1,
                         rate * s.lr_mult);
  }
}

// A rule: its name, its history buffers, and the constants its formula takes (Adam's correction
// depends on the iteration).
class Rule : public UpdateRule {
 public:
  Rule(const char* type, UpdateConstants constants) : type_(type), constants_(constants) {}
  const char* type() const override { return type_; }
  int num_history() const override { return HasTwoHistories(constants_.kind) ? 2 : 1; }
  UpdateConstants constants(int iter) const override {
    UpdateConstants c = constants_;
    if (c.kind == UpdateConstants::kAdam) c.correction = AdamCorrection(c.mu, c.mu2, iter);
    return c;
  }
  void Apply(FlatParams& params, const std::vector<float*>& history, float rate, int iter) override {
    CHECK_EQ(static_cast<int>(history.size()), num_history()) << type() << " history";
    const UpdateConstants c = constants(iter);
    switch (c.kind) {
      case UpdateConstants::kSGD: return ApplyToSegments<UpdateConstants::kSGD>(c, params, history, rate);
      case UpdateConstants::kNesterov: return ApplyToSegments<UpdateConstants::kNesterov>(c, params, history, rate);
      case UpdateConstants::kAdaGrad: return ApplyToSegments<UpdateConstants::kAdaGrad>(c, params, history, rate);
      case UpdateConstants::kRMSProp: return ApplyToSegments<UpdateConstants::kRMSProp>(c, params, history, rate);
      case UpdateConstants::kAdaDelta: return ApplyToSegments<UpdateConstants::kAdaDelta>(c, params, history, rate);
      case UpdateConstants::kAdam: return ApplyToSegments<UpdateConstants::kAdam>(c, params, history, rate);
    }
  }

 private:
  const char* type_;
  UpdateConstants constants_;
};

constexpr const char* kKnownTypes = "SGD, Nesterov, AdaGrad, RMSProp, AdaDelta, Adam";

// The rule's name: type when set, else the deprecated solver_type enum (Caffe's upgrade rule).
std::string RuleName(const SolverParameter& p) {
  if (p.has_type()) {
    CORTADO_REQUIRE(!p.has_solver_type(), "solver: type \"", p.type(),
                    "\" and the deprecated solver_type are both set; keep only type");
    return p.type();
  }
  switch (p.solver_type()) {
    case SolverParameter::SGD: return "SGD";
    case SolverParameter::NESTEROV: return "Nesterov";
    case SolverParameter::ADAGRAD: return "AdaGrad";
    case SolverParameter::RMSPROP: return "RMSProp";
    case SolverParameter::ADADELTA: return "AdaDelta";
    case SolverParameter::ADAM: return "Adam";
  }
  Fail("solver: unknown solver_type ", static_cast<int>(p.solver_type()), " (known types: ",
       kKnownTypes, ")");
}

}  // namespace

FlatParams FlatParamsOf(Net& net) {
  FlatParams flat{net.param_data(), net.param_diff(), net.param_count(), {}};
  int64_t offset = 0;
  const auto& learnable = net.learnable_params();
  for (size_t k = 0; k < learnable.size(); ++k) {
    flat.segments.push_back({offset, learnable[k]->count(), net.params_lr()[k], net.params_weight_decay()[k]});
    offset += learnable[k]->count();
  }
  return flat;
}

void UpdateRule::ApplyOn(Context& ctx, FlatParams& params, const std::vector<float*>& history, float rate,
                         int iter) {
  if (ctx.device() == Device::kCPU) return Apply(params, history, rate, iter);
  CHECK_EQ(static_cast<int>(history.size()), num_history()) << type() << " history";
  gpu_update(ctx, constants(iter), params, history, rate);
}

std::unique_ptr<UpdateRule> UpdateRule::Create(const SolverParameter& p) {
  const std::string name = RuleName(p);
  using C = UpdateConstants;
  if (name == "SGD") return std::make_unique<Rule>("SGD", C{C::kSGD, p.momentum()});
  if (name == "Nesterov") return std::make_unique<Rule>("Nesterov", C{C::kNesterov, p.momentum()});
  if (name == "AdaGrad") {
    CORTADO_REQUIRE(p.momentum() == 0, "solver: AdaGrad does not use momentum; set momentum: 0 (got ",
                    p.momentum(), ")");
    return std::make_unique<Rule>("AdaGrad", C{C::kAdaGrad, 0, 0, p.delta()});
  }
  if (name == "RMSProp") {
    CORTADO_REQUIRE(p.momentum() == 0, "solver: RMSProp does not use momentum (its decay is ",
                    "rms_decay); set momentum: 0 (got ", p.momentum(), ")");
    CORTADO_REQUIRE(p.rms_decay() >= 0 && p.rms_decay() < 1,
                    "solver: RMSProp needs rms_decay in [0, 1) (got ", p.rms_decay(), ")");
    return std::make_unique<Rule>("RMSProp", C{C::kRMSProp, p.rms_decay(), 0, p.delta()});
  }
  if (name == "AdaDelta") return std::make_unique<Rule>("AdaDelta", C{C::kAdaDelta, p.momentum(), 0, p.delta()});
  if (name == "Adam") {
    CORTADO_REQUIRE(p.momentum() >= 0 && p.momentum() < 1,
                    "solver: Adam needs momentum (beta1) in [0, 1) (got ", p.momentum(), ")");
    CORTADO_REQUIRE(p.momentum2() >= 0 && p.momentum2() < 1,
                    "solver: Adam needs momentum2 (beta2) in [0, 1) (got ", p.momentum2(), ")");
    return std::make_unique<Rule>("Adam", C{C::kAdam, p.momentum(), p.momentum2(), p.delta()});
  }
  Fail("solver: unknown solver type \"", name, "\" (known types: ", kKnownTypes, ")");
}

}  // namespace cortado
