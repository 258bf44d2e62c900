// threshold.cpp — Threshold (threshold_param.threshold t = 0): y = x > t ? 1 : 0.
// Not differentiable, and, as in Caffe, it has no backward pass: asking it for a bottom gradient is an
// Error naming the layer (a net that only runs it forward, or with propagate_down: false, is fine).
// The arithmetic is neuron_math.hpp's, on either device.
#include "cortado/error.hpp"
#include "cortado/layer_registry.hpp"
#include "neuron_math.hpp"

namespace cortado {

class ThresholdLayer : public EitherDevice<NeuronLayer> {
 public:
  using EitherDevice::EitherDevice;
  const char* type() const override { return "Threshold"; }
  bool BackwardReadsBottomData(int) const override { return false; }  // no backward pass
  bool BackwardReadsTopData(int) const override { return false; }
  bool InPlaceSafe() const override { return true; }

 protected:
  void Forward_any(const BlobVec& bottom, const BlobVec& top) override {
    Map(ctx_, bottom[0]->count(), neuron::ThresholdForward{param_.threshold_param().threshold()}, top[0]->data(),
        bottom[0]->data());
  }

  void Backward_any(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override {
    if (propagate_down[0]) NoBackward();
  }

 private:
  [[noreturn]] void NoBackward() const {
    Fail(Describe(), ": has no backward pass (a step function has no gradient); set propagate_down: false "
         "on it or keep layers that learn out of its bottom's path");
  }
};

CORTADO_REGISTER_LAYER(Threshold, ThresholdLayer);

}  // namespace cortado
