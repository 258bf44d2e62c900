// elu.cpp — ELU (elu_param.alpha = 1): y = x > 0 ? x : alpha·(e^x − 1).
// Backward: dx = dy · (x > 0 ? 1 : alpha + y), reading x and y as Caffe does. Runs in place (top ==
// bottom) as well when alpha ≥ 0: the bottom then holds y, and y > 0 exactly where x > 0 (the Net
// runs a negative alpha out of place).
// The arithmetic is neuron_math.hpp's, on either device.
#include "cortado/layer_registry.hpp"
#include "neuron_math.hpp"

namespace cortado {

class ELULayer : public EitherDevice<NeuronLayer> {
 public:
  using EitherDevice::EitherDevice;
  const char* type() const override { return "ELU"; }
  // In place x's test reads y, which has x's sign only when alpha ≥ 0.
  bool InPlaceSafe() const override { return param_.elu_param().alpha() >= 0.0f; }

 protected:
  void Forward_any(const BlobVec& bottom, const BlobVec& top) override {
    Map(ctx_, bottom[0]->count(), neuron::ELUForward{param_.elu_param().alpha()}, top[0]->data(), bottom[0]->data());
  }

  void Backward_any(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    Map(ctx_, bottom[0]->count(), neuron::ELUBackward{param_.elu_param().alpha()}, bottom[0]->diff(),
        bottom[0]->data(), top[0]->data(), top[0]->diff());
  }

};

CORTADO_REGISTER_LAYER(ELU, ELULayer);

}  // namespace cortado
