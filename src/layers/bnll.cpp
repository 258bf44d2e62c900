// bnll.cpp — BNLL (binomial normal log likelihood, softplus): y = log(1 + e^x), computed as
// x + log(1 + e^−x) for x > 0 so that large inputs do not overflow.
// Backward: dx = dy · e^x / (e^x + 1), with e^min(x, 50) as in Caffe. No parameters.
// Backward needs x: run in place (top == bottom), Forward first keeps a copy of x in a scratch buffer
// (Caffe reads the overwritten bottom there and gets a wrong gradient).
// The arithmetic is neuron_math.hpp's, on either device.
#include "cortado/layer_registry.hpp"
#include "neuron_math.hpp"

namespace cortado {

class BNLLLayer : public EitherDevice<NeuronLayer> {
 public:
  using EitherDevice::EitherDevice;
  const char* type() const override { return "BNLL"; }
  bool BackwardReadsTopData(int) const override { return false; }
  bool InPlaceSafe() const override { return true; }  // x kept (KeepInputWhenInPlace)

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override { KeepInputWhenInPlace(bottom, top); }

 protected:
  void Forward_any(const BlobVec& bottom, const BlobVec& top) override {
    SaveInput(bottom);
    Map(ctx_, bottom[0]->count(), neuron::BNLLForward{}, top[0]->data(), bottom[0]->data());
  }

  void Backward_any(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    Map(ctx_, bottom[0]->count(), neuron::BNLLBackward{}, bottom[0]->diff(), ForwardInput(bottom), top[0]->diff());
  }
};

CORTADO_REGISTER_LAYER(BNLL, BNLLLayer);

}  // namespace cortado
