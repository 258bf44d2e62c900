// absval.cpp — AbsVal: y = |x|.  Backward: dx = dy · sign(x), sign(0) = 0.
// No parameters. Like Caffe, it refuses to run in place (top == bottom): Backward needs x's sign.
// The arithmetic is neuron_math.hpp's, on either device.
#include "cortado/error.hpp"
#include "cortado/layer_registry.hpp"
#include "neuron_math.hpp"

namespace cortado {

class AbsValLayer : public EitherDevice<NeuronLayer> {
 public:
  using EitherDevice::EitherDevice;
  const char* type() const override { return "AbsVal"; }
  bool BackwardReadsTopData(int) const override { return false; }

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override {
    CORTADO_REQUIRE(top[0] != bottom[0], Describe(), ": cannot run in place (its backward needs the input); "
                    "give the top its own name");
  }

 protected:
  void Forward_any(const BlobVec& bottom, const BlobVec& top) override {
    Map(ctx_, bottom[0]->count(), neuron::AbsValForward{}, top[0]->data(), bottom[0]->data());
  }

  void Backward_any(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    Map(ctx_, bottom[0]->count(), neuron::AbsValBackward{}, bottom[0]->diff(), bottom[0]->data(), top[0]->diff());
  }
};

CORTADO_REGISTER_LAYER(AbsVal, AbsValLayer);

}  // namespace cortado
