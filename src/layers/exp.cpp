// exp.cpp — Exp (exp_param: base = −1 meaning e, scale = 1, shift = 0): y = base^(shift + scale·x),
// computed as y = outer · e^(inner·x) with inner = ln(base)·scale and outer = base^shift (1 when
// shift = 0). Backward from the top data: dx = dy · inner · y, so it runs in place too.
// base must be positive (or −1).
// The arithmetic is neuron_math.hpp's, on either device.
#include <cmath>

#include "cortado/error.hpp"
#include "cortado/layer_registry.hpp"
#include "neuron_math.hpp"

namespace cortado {

class ExpLayer : public EitherDevice<NeuronLayer> {
 public:
  using EitherDevice::EitherDevice;
  const char* type() const override { return "Exp"; }
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
  void Forward_any(const BlobVec& bottom, const BlobVec& top) override {
    Map(ctx_, bottom[0]->count(), neuron::ExpForward{inner_, outer_}, top[0]->data(), bottom[0]->data());
  }

  void Backward_any(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    Map(ctx_, top[0]->count(), neuron::ExpBackward{inner_}, bottom[0]->diff(), top[0]->data(), top[0]->diff());
  }

 private:
  float inner_ = 1, outer_ = 1;
};

CORTADO_REGISTER_LAYER(Exp, ExpLayer);

}  // namespace cortado
