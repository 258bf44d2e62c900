// power.cpp — Power (power_param: power p = 1, scale a = 1, shift b = 0): y = (b + a·x)^p.
// Backward: dx = dy · p·a · (b + a·x)^(p−1). As in Caffe, p·a = 0 makes y the constant
// (p = 0 ? 1 : b^p) with dx = 0, and p = 1 makes dx = a·dy without reading x. The gradient is computed
// directly, where Caffe divides y by (b + a·x): the same values except at b + a·x = 0 (Caffe: NaN).
// Backward needs x when p ≠ 1: run in place (top == bottom), Forward first keeps a copy of x in a
// scratch buffer (Caffe reads the overwritten bottom there and gets a wrong gradient).
// The arithmetic is neuron_math.hpp's, on either device.
#include <cmath>

#include "cortado/layer_registry.hpp"
#include "neuron_math.hpp"

namespace cortado {

class PowerLayer : public EitherDevice<NeuronLayer> {
 public:
  using EitherDevice::EitherDevice;
  const char* type() const override { return "Power"; }
  // x only when p ≠ 1 and p·a ≠ 0 (and then its copy when in place).
  bool BackwardReadsBottomData(int i) const override {
    return diff_scale_ != 0.0f && power_ != 1.0f && NeuronLayer::BackwardReadsBottomData(i);
  }
  bool BackwardReadsTopData(int) const override { return false; }
  bool InPlaceSafe() const override { return true; }  // x kept (KeepInputWhenInPlace) when read

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override {
    const PowerParameter& p = param_.power_param();
    power_ = p.power();
    scale_ = p.scale();
    shift_ = p.shift();
    diff_scale_ = power_ * scale_;
    if (diff_scale_ != 0.0f && power_ != 1.0f) KeepInputWhenInPlace(bottom, top);
  }

 protected:
  void Forward_any(const BlobVec& bottom, const BlobVec& top) override {
    const int64_t n = bottom[0]->count();
    if (diff_scale_ == 0.0f) {
      Map(ctx_, n, arithmetic::Constant{Constant()}, top[0]->data());
      return;
    }
    SaveInput(bottom);
    Map(ctx_, n, neuron::PowerForward{power_, scale_, shift_}, top[0]->data(), bottom[0]->data());
  }

  void Backward_any(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const int64_t n = bottom[0]->count();
    float* dx = bottom[0]->diff();
    const float* dy = top[0]->diff();
    if (diff_scale_ == 0.0f) {
      Map(ctx_, n, arithmetic::Constant{0.0f}, dx);
    } else if (power_ == 1.0f) {
      Map(ctx_, n, arithmetic::Scaled{diff_scale_}, dx, dy);
    } else {
      Map(ctx_, n, neuron::PowerBackward{power_, scale_, shift_}, dx, ForwardInput(bottom), dy);
    }
  }

 private:
  // u^p, exactly u when p = 1 (the kernel does the same).
  static float PowUnlessOne(float u, float p) { return p == 1.0f ? u : std::pow(u, p); }
  float Constant() const { return power_ == 0.0f ? 1.0f : std::pow(shift_, power_); }

  float power_ = 1, scale_ = 1, shift_ = 0, diff_scale_ = 1;
};

CORTADO_REGISTER_LAYER(Power, PowerLayer);

}  // namespace cortado
