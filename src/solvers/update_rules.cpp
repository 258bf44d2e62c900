// update_rules.cpp — the six update rules (SGD, Nesterov, AdaGrad, RMSProp, AdaDelta, Adam), each one
// fused element-wise loop per parameter segment, and the factory that picks one by name. On a GPU
// context ApplyOn hands the rule's constants to its kernel (cuda/update_rules_gpu.cu).
// Formulas: include/cortado/update_rules.hpp. Each loop keeps Caffe's order of float operations.
#include <glog/logging.h>

#include <cmath>
#include <string>

#include "cortado/error.hpp"          // Fail, CORTADO_REQUIRE
#include "cortado/net.hpp"            // FlatParamsOf
#include "cortado/update_rules.hpp"   // UpdateRule, FlatParams

namespace cortado {

namespace {

// Adam's bias correction √(1−β₂ᵗ)/(1−β₁ᵗ) at t = iter + 1, in double, rounded once.
float AdamCorrection(float beta1, float beta2, int iter) {
  const double t = iter + 1.0;
  return static_cast<float>(std::sqrt(1.0 - std::pow(double{beta2}, t)) / (1.0 - std::pow(double{beta1}, t)));
}

// Calls kernel(n, w, g, h0, h1, α) on each segment; h1 is null for one-buffer rules. The kernels take
// __restrict pointers: weights, gradients and history are disjoint buffers.
template <typename Kernel>
void ForEachSegment(const UpdateRule& rule, FlatParams& p, const std::vector<float*>& history,
                    float rate, Kernel kernel) {
  CHECK_EQ(static_cast<int>(history.size()), rule.num_history()) << rule.type() << " history";
  for (const ParamSegment& s : p.segments) {
    CHECK(s.offset >= 0 && s.offset + s.count <= p.count) << "segment outside the flat buffer";
    float* h1 = history.size() > 1 ? history[1] + s.offset : nullptr;
    kernel(s.count, p.data + s.offset, p.diff + s.offset, history[0] + s.offset, h1,
           rate * s.lr_mult);
  }
}

class SGDRule : public UpdateRule {
 public:
  explicit SGDRule(const SolverParameter& p) : mu_(p.momentum()) {}
  const char* type() const override { return "SGD"; }
  int num_history() const override { return 1; }
  UpdateConstants constants(int) const override { return {UpdateConstants::kSGD, mu_}; }
  void Apply(FlatParams& params, const std::vector<float*>& history, float rate, int) override {
    const float mu = mu_;
    ForEachSegment(*this, params, history, rate,
                   [mu](int64_t n, float* __restrict w, float* __restrict g, float* __restrict h,
                        float*, float alpha) {
                     for (int64_t i = 0; i < n; ++i) {
                       const float v = alpha * g[i] + mu * h[i];
                       h[i] = v;
                       g[i] = v;
                       w[i] -= v;
                     }
                   });
  }

 private:
  float mu_;
};

class NesterovRule : public UpdateRule {
 public:
  explicit NesterovRule(const SolverParameter& p) : mu_(p.momentum()) {}
  const char* type() const override { return "Nesterov"; }
  int num_history() const override { return 1; }
  UpdateConstants constants(int) const override { return {UpdateConstants::kNesterov, mu_}; }
  void Apply(FlatParams& params, const std::vector<float*>& history, float rate, int) override {
    const float mu = mu_, one_plus_mu = 1.0f + mu_;
    ForEachSegment(*this, params, history, rate,
                   [=](int64_t n, float* __restrict w, float* __restrict g, float* __restrict h,
                       float*, float alpha) {
                     for (int64_t i = 0; i < n; ++i) {
                       const float old = h[i];
                       const float v = alpha * g[i] + mu * old;
                       const float u = one_plus_mu * v + -mu * old;
                       h[i] = v;
                       g[i] = u;
                       w[i] -= u;
                     }
                   });
  }

 private:
  float mu_;
};

class AdaGradRule : public UpdateRule {
 public:
  explicit AdaGradRule(const SolverParameter& p) : delta_(p.delta()) {}
  const char* type() const override { return "AdaGrad"; }
  int num_history() const override { return 1; }
  UpdateConstants constants(int) const override { return {UpdateConstants::kAdaGrad, 0, 0, delta_}; }
  void Apply(FlatParams& params, const std::vector<float*>& history, float rate, int) override {
    const float delta = delta_;
    ForEachSegment(*this, params, history, rate,
                   [delta](int64_t n, float* __restrict w, float* __restrict g,
                           float* __restrict h, float*, float alpha) {
                     for (int64_t i = 0; i < n; ++i) {
                       const float gi = g[i];
                       const float hi = h[i] + gi * gi;
                       const float u = alpha * (gi / (std::sqrt(hi) + delta));
                       h[i] = hi;
                       g[i] = u;
                       w[i] -= u;
                     }
                   });
  }

 private:
  float delta_;
};

class RMSPropRule : public UpdateRule {
 public:
  explicit RMSPropRule(const SolverParameter& p) : rho_(p.rms_decay()), delta_(p.delta()) {}
  const char* type() const override { return "RMSProp"; }
  int num_history() const override { return 1; }
  UpdateConstants constants(int) const override { return {UpdateConstants::kRMSProp, rho_, 0, delta_}; }
  void Apply(FlatParams& params, const std::vector<float*>& history, float rate, int) override {
    const float rho = rho_, one_minus_rho = 1.0f - rho_, delta = delta_;
    ForEachSegment(*this, params, history, rate,
                   [=](int64_t n, float* __restrict w, float* __restrict g, float* __restrict h,
                       float*, float alpha) {
                     for (int64_t i = 0; i < n; ++i) {
                       const float gi = g[i];
                       const float hi = one_minus_rho * (gi * gi) + rho * h[i];
                       const float u = alpha * (gi / (std::sqrt(hi) + delta));
                       h[i] = hi;
                       g[i] = u;
                       w[i] -= u;
                     }
                   });
  }

 private:
  float rho_, delta_;
};

// The local rate scales the update only at the end (Caffe's AdaDelta is usually run at base_lr 1).
class AdaDeltaRule : public UpdateRule {
 public:
  explicit AdaDeltaRule(const SolverParameter& p) : mu_(p.momentum()), delta_(p.delta()) {}
  const char* type() const override { return "AdaDelta"; }
  int num_history() const override { return 2; }
  UpdateConstants constants(int) const override { return {UpdateConstants::kAdaDelta, mu_, 0, delta_}; }
  void Apply(FlatParams& params, const std::vector<float*>& history, float rate, int) override {
    const float mu = mu_, one_minus_mu = 1.0f - mu_, delta = delta_;
    ForEachSegment(*this, params, history, rate,
                   [=](int64_t n, float* __restrict w, float* __restrict g, float* __restrict h,
                       float* __restrict s, float alpha) {
                     for (int64_t i = 0; i < n; ++i) {
                       const float gi = g[i];
                       const float hi = one_minus_mu * (gi * gi) + mu * h[i];
                       const float d = gi * std::sqrt((delta + s[i]) / (delta + hi));
                       const float u = alpha * d;
                       h[i] = hi;
                       s[i] = one_minus_mu * (d * d) + mu * s[i];
                       g[i] = u;
                       w[i] -= u;
                     }
                   });
  }

 private:
  float mu_, delta_;
};

class AdamRule : public UpdateRule {
 public:
  explicit AdamRule(const SolverParameter& p)
      : beta1_(p.momentum()), beta2_(p.momentum2()), eps_(p.delta()) {}
  const char* type() const override { return "Adam"; }
  int num_history() const override { return 2; }
  UpdateConstants constants(int iter) const override {
    return {UpdateConstants::kAdam, beta1_, beta2_, eps_, AdamCorrection(beta1_, beta2_, iter)};
  }
  void Apply(FlatParams& params, const std::vector<float*>& history, float rate,
             int iter) override {
    const float correction = AdamCorrection(beta1_, beta2_, iter);
    const float b1 = beta1_, b2 = beta2_, c1 = 1.0f - beta1_, c2 = 1.0f - beta2_, eps = eps_;
    ForEachSegment(*this, params, history, rate,
                   [=](int64_t n, float* __restrict w, float* __restrict g, float* __restrict m,
                       float* __restrict v, float alpha) {
                     const float step = alpha * correction;
                     for (int64_t i = 0; i < n; ++i) {
                       const float gi = g[i];
                       const float mi = c1 * gi + b1 * m[i];
                       const float vi = c2 * (gi * gi) + b2 * v[i];
                       const float u = step * (mi / (std::sqrt(vi) + eps));
                       m[i] = mi;
                       v[i] = vi;
                       g[i] = u;
                       w[i] -= u;
                     }
                   });
  }

 private:
  float beta1_, beta2_, eps_;
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
  if (name == "SGD") return std::make_unique<SGDRule>(p);
  if (name == "Nesterov") return std::make_unique<NesterovRule>(p);
  if (name == "AdaGrad") {
    CORTADO_REQUIRE(p.momentum() == 0, "solver: AdaGrad does not use momentum; set momentum: 0 (got ",
                    p.momentum(), ")");
    return std::make_unique<AdaGradRule>(p);
  }
  if (name == "RMSProp") {
    CORTADO_REQUIRE(p.momentum() == 0, "solver: RMSProp does not use momentum (its decay is ",
                    "rms_decay); set momentum: 0 (got ", p.momentum(), ")");
    CORTADO_REQUIRE(p.rms_decay() >= 0 && p.rms_decay() < 1,
                    "solver: RMSProp needs rms_decay in [0, 1) (got ", p.rms_decay(), ")");
    return std::make_unique<RMSPropRule>(p);
  }
  if (name == "AdaDelta") return std::make_unique<AdaDeltaRule>(p);
  if (name == "Adam") {
    CORTADO_REQUIRE(p.momentum() >= 0 && p.momentum() < 1,
                    "solver: Adam needs momentum (beta1) in [0, 1) (got ", p.momentum(), ")");
    CORTADO_REQUIRE(p.momentum2() >= 0 && p.momentum2() < 1,
                    "solver: Adam needs momentum2 (beta2) in [0, 1) (got ", p.momentum2(), ")");
    return std::make_unique<AdamRule>(p);
  }
  Fail("solver: unknown solver type \"", name, "\" (known types: ", kKnownTypes, ")");
}

}  // namespace cortado
