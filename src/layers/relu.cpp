// relu.cpp — ReLU: y = max(0, x) + negative_slope · min(0, x).
// Backward: dx = dy · (x > 0 ? 1 : negative_slope). Runs in place (top == bottom) as well when
// negative_slope ≥ 0 (then y > 0 exactly where x > 0); the Net runs a negative slope out of place.
// The arithmetic is neuron_math.hpp's, on either device, over float or 16-bit storage (MapStored).
#include "cortado/layer_registry.hpp"
#include "neuron_math.hpp"

namespace cortado {

class ReLULayer : public EitherDevice<NeuronLayer> {
 public:
  using EitherDevice::EitherDevice;
  const char* type() const override { return "ReLU"; }
  // Backward reads x (in place: y, which has x's sign only when slope ≥ 0), never y as such.
  bool BackwardReadsTopData(int) const override { return false; }
  bool InPlaceSafe() const override { return param_.relu_param().negative_slope() >= 0.0f; }

 protected:
  void Forward_any(const BlobVec& bottom, const BlobVec& top) override {
    MapStored(ctx_, bottom[0]->count(), neuron::ReLUForward{param_.relu_param().negative_slope()},
              top[0]->data_type(), top[0]->raw_data(), bottom[0]->raw_data());
  }

  void Backward_any(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    // In place, bottom data already holds y; y > 0 exactly where x > 0 (for slope ≥ 0).
    MapStored(ctx_, bottom[0]->count(), neuron::ReLUBackward{param_.relu_param().negative_slope()},
              bottom[0]->diff_type(), bottom[0]->raw_diff(), bottom[0]->raw_data(), top[0]->raw_diff());
  }
};

CORTADO_REGISTER_LAYER(ReLU, ReLULayer);

}  // namespace cortado
