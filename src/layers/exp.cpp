// exp.cpp — Exp (exp_param: base = −1 meaning e, scale = 1, shift = 0): y = base^(shift + scale·x),
// computed as y = outer · e^(inner·x) with inner = ln(base)·scale and outer = base^shift (1 when
// shift = 0). Backward from the top data: dx = dy · inner · y, so it runs in place too.
// base must be positive (or −1).
// GPU: the same two loops as kernels (cuda/activations.cu).
#include <cmath>

#include "cortado/error.hpp"
#include "cortado/gpu.hpp"
#include "cortado/kernels/activation.hpp"
#include "cortado/layer_registry.hpp"

namespace cortado {

class ExpLayer : public NeuronLayer {
 public:
  using NeuronLayer::NeuronLayer;
  const char* type() const override { return "Exp"; }
  bool HasGpuImplementation() const override { return BuiltWithCuda(); }
  bool BackwardReadsBottomData(int) const override { return false; }  // from y alone
  bool InPlaceSafe() const override { return true; }

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override {
    const ExpParameter& p = param_.exp_param();
    const float base = p.base();
    CORTADO_REQUIRE(base == -1.0f || (base > 0.0f && std::isfinite(base)), Describe(),
                    ": exp_param.base must be positive (or -1 for e), got ", base);
    const float log_base = base == -1.0f ? 1.0f : std::log(base);
    inner_ = log_base * p.scale();
    outer_ = p.shift() == 0.0f ? 1.0f : (base == -1.0f ? std::exp(p.shift()) : std::pow(base, p.shift()));
  }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const float* x = bottom[0]->data();
    float* y = top[0]->data();
    for (int64_t i = 0; i < bottom[0]->count(); ++i) y[i] = outer_ * std::exp(inner_ * x[i]);
  }

  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const float* y = top[0]->data();
    const float* dy = top[0]->diff();
    float* dx = bottom[0]->diff();
    for (int64_t i = 0; i < top[0]->count(); ++i) dx[i] = dy[i] * y[i] * inner_;
  }

  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    ExpForwardGpu(ctx_, bottom[0]->count(), inner_, outer_, bottom[0]->data(), top[0]->data());
  }

  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    ExpBackwardGpu(ctx_, top[0]->count(), inner_, top[0]->data(), top[0]->diff(), bottom[0]->diff());
  }

 private:
  float inner_ = 1, outer_ = 1;
};

CORTADO_REGISTER_LAYER(Exp, ExpLayer);

}  // namespace cortado
