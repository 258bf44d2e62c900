// tanh.cpp — TanH: y = tanh(x).
// Backward from the top data: dx = dy · (1 − y²). Runs in place (top == bottom) as well.
// The arithmetic is neuron_math.hpp's, on either device.
#include "cortado/layer_registry.hpp"
#include "neuron_math.hpp"

namespace cortado {

class TanHLayer : public EitherDevice<NeuronLayer> {
 public:
  using EitherDevice::EitherDevice;
  const char* type() const override { return "TanH"; }
  bool BackwardReadsBottomData(int) const override { return false; }  // from y alone
  bool InPlaceSafe() const override { return true; }

 protected:
  void Forward_any(const BlobVec& bottom, const BlobVec& top) override {
    MapStored(ctx_, bottom[0]->count(), neuron::TanHForward{}, top[0]->data_type(), top[0]->raw_data(),
              bottom[0]->raw_data());
  }

  void Backward_any(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    MapStored(ctx_, top[0]->count(), neuron::TanHBackward{}, bottom[0]->diff_type(), bottom[0]->raw_diff(),
              top[0]->raw_data(), top[0]->raw_diff());
  }
};

CORTADO_REGISTER_LAYER(TanH, TanHLayer);

}  // namespace cortado
