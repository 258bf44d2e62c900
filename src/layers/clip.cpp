// clip.cpp — Clip (clip_param: min, max; both required): y = max(min, min(x, max)).
// Backward: dx = dy where min ≤ x ≤ max (bounds included, as in Caffe), else 0. min ≤ max.
// Backward needs x: run in place (top == bottom), Forward first keeps a copy of x in a scratch buffer
// (Caffe reads the clipped values there and passes every gradient).
// The arithmetic is neuron_math.hpp's, on either device.
#include "cortado/error.hpp"
#include "cortado/layer_registry.hpp"
#include "neuron_math.hpp"

namespace cortado {

class ClipLayer : public EitherDevice<NeuronLayer> {
 public:
  using EitherDevice::EitherDevice;
  const char* type() const override { return "Clip"; }
  bool BackwardReadsTopData(int) const override { return false; }
  bool InPlaceSafe() const override { return true; }  // x kept (KeepInputWhenInPlace)

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override {
    const ClipParameter& p = param_.clip_param();
    CORTADO_REQUIRE(p.has_min() && p.has_max(), Describe(), ": clip_param needs both min and max");
    lo_ = p.min();
    hi_ = p.max();
    CORTADO_REQUIRE(lo_ <= hi_, Describe(), ": clip_param.min (", lo_, ") is greater than max (", hi_, ")");
    KeepInputWhenInPlace(bottom, top);
  }

 protected:
  void Forward_any(const BlobVec& bottom, const BlobVec& top) override {
    SaveInput(bottom);
    Map(ctx_, bottom[0]->count(), neuron::ClipForward{lo_, hi_}, top[0]->data(), bottom[0]->data());
  }

  void Backward_any(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    Map(ctx_, bottom[0]->count(), neuron::ClipBackward{lo_, hi_}, bottom[0]->diff(), ForwardInput(bottom),
        top[0]->diff());
  }

 private:
  float lo_ = 0, hi_ = 0;
};

CORTADO_REGISTER_LAYER(Clip, ClipLayer);

}  // namespace cortado
