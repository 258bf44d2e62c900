// swish.cpp — Swish (swish_param.beta = 1): y = x · s with s = sigmoid(beta·x) = 1 / (1 + e^(−beta·x)).
// Backward: dx = dy · (beta·y + s·(1 − beta·y)), from the top data and s, which Forward keeps in a
// scratch buffer (Caffe keeps it in its inner Sigmoid layer's top). Runs in place (top == bottom).
// The arithmetic is neuron_math.hpp's, on either device.
#include "cortado/layer_registry.hpp"
#include "neuron_math.hpp"

namespace cortado {

class SwishLayer : public EitherDevice<NeuronLayer> {
 public:
  using EitherDevice::EitherDevice;
  const char* type() const override { return "Swish"; }
  bool BackwardReadsBottomData(int) const override { return false; }  // from y and s
  bool InPlaceSafe() const override { return true; }

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override { sigmoid_ = AddStepScratch(); }

  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    NeuronLayer::Reshape(bottom, top);
    sigmoid_->ReshapeLike(*bottom[0]);
  }

 protected:
  void Forward_any(const BlobVec& bottom, const BlobVec& top) override {
    const int64_t n = bottom[0]->count();
    const float* x = bottom[0]->data();  // y may be x: s is taken first, then y = x·s
    Map(ctx_, n, neuron::SwishSigmoid{param_.swish_param().beta()}, sigmoid_->data(), x);
    Map(ctx_, n, arithmetic::Product{}, top[0]->data(), x, sigmoid_->data());
  }

  void Backward_any(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    Map(ctx_, top[0]->count(), neuron::SwishBackward{param_.swish_param().beta()}, bottom[0]->diff(), top[0]->data(),
        sigmoid_->data(), top[0]->diff());
  }

 private:
  Blob* sigmoid_ = nullptr;  // s = sigmoid(beta·x) of the last Forward
};

CORTADO_REGISTER_LAYER(Swish, SwishLayer);

}  // namespace cortado
