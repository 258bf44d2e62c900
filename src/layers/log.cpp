// log.cpp — Log (log_param: base = −1 meaning e, scale = 1, shift = 0): y = log_base(shift + scale·x),
// computed as ln(shift + scale·x) / ln(base).
// Backward: dx = dy · scale / (ln(base) · (shift + scale·x)). base must be positive and not 1.
// Backward needs x: run in place (top == bottom), Forward first keeps a copy of x in a scratch buffer
// (Caffe reads the overwritten bottom there and gets a wrong gradient).
// The arithmetic is neuron_math.hpp's, on either device.
#include <cmath>

#include "cortado/error.hpp"
#include "cortado/layer_registry.hpp"
#include "neuron_math.hpp"

namespace cortado {

class LogLayer : public EitherDevice<NeuronLayer> {
 public:
  using EitherDevice::EitherDevice;
  const char* type() const override { return "Log"; }
  bool BackwardReadsTopData(int) const override { return false; }
  bool InPlaceSafe() const override { return true; }  // x kept (KeepInputWhenInPlace)

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override {
    const LogParameter& p = param_.log_param();
    const float base = p.base();
    CORTADO_REQUIRE(base == -1.0f || (base > 0.0f && base != 1.0f && std::isfinite(base)), Describe(),
                    ": log_param.base must be positive and not 1 (or -1 for e), got ", base);
    const float log_base = base == -1.0f ? 1.0f : std::log(base);
    scale_ = p.scale();
    shift_ = p.shift();
    base_scale_ = 1.0f / log_base;
    num_scale_ = scale_ / log_base;
    KeepInputWhenInPlace(bottom, top);
  }

 protected:
  void Forward_any(const BlobVec& bottom, const BlobVec& top) override {
    SaveInput(bottom);
    Map(ctx_, bottom[0]->count(), neuron::LogForward{scale_, shift_, base_scale_}, top[0]->data(), bottom[0]->data());
  }

  void Backward_any(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    Map(ctx_, bottom[0]->count(), neuron::LogBackward{scale_, shift_, num_scale_}, bottom[0]->diff(),
        ForwardInput(bottom), top[0]->diff());
  }

 private:
  float scale_ = 1, shift_ = 0, base_scale_ = 1, num_scale_ = 1;
};

CORTADO_REGISTER_LAYER(Log, LogLayer);

}  // namespace cortado
