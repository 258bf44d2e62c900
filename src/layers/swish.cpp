// swish.cpp — Swish (swish_param.beta = 1): y = x · s with s = sigmoid(beta·x) = 1 / (1 + e^(−beta·x)).
// Backward: dx = dy · (beta·y + s·(1 − beta·y)), from the top data and s, which Forward keeps in a
// scratch buffer (Caffe keeps it in its inner Sigmoid layer's top). Runs in place (top == bottom).
// GPU: the same two loops as kernels (cuda/activations.cu).
#include <cmath>

#include "cortado/gpu.hpp"
#include "cortado/kernels/activation.hpp"
#include "cortado/layer_registry.hpp"

namespace cortado {

class SwishLayer : public NeuronLayer {
 public:
  using NeuronLayer::NeuronLayer;
  const char* type() const override { return "Swish"; }
  bool HasGpuImplementation() const override { return BuiltWithCuda(); }
  bool BackwardReadsBottomData(int) const override { return false; }  // from y and s
  bool InPlaceSafe() const override { return true; }

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override { sigmoid_ = AddStepScratch(); }

  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    NeuronLayer::Reshape(bottom, top);
    sigmoid_->ReshapeLike(*bottom[0]);
  }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const float beta = param_.swish_param().beta();
    const float* x = bottom[0]->data();
    float* s = sigmoid_->data();
    float* y = top[0]->data();
    for (int64_t i = 0; i < bottom[0]->count(); ++i) {
      const float v = x[i];
      s[i] = 1.0f / (1.0f + std::exp(-beta * v));
      y[i] = v * s[i];
    }
  }

  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const float beta = param_.swish_param().beta();
    const float* y = top[0]->data();
    const float* s = sigmoid_->data();
    const float* dy = top[0]->diff();
    float* dx = bottom[0]->diff();
    for (int64_t i = 0; i < top[0]->count(); ++i) {
      const float by = beta * y[i];
      dx[i] = dy[i] * (by + s[i] * (1.0f - by));
    }
  }

  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    SwishForwardGpu(ctx_, bottom[0]->count(), param_.swish_param().beta(), bottom[0]->data(), sigmoid_->data(),
                    top[0]->data());
  }

  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    SwishBackwardGpu(ctx_, top[0]->count(), param_.swish_param().beta(), top[0]->data(), sigmoid_->data(),
                     top[0]->diff(), bottom[0]->diff());
  }

 private:
  Blob* sigmoid_ = nullptr;  // s = sigmoid(beta·x) of the last Forward
};

CORTADO_REGISTER_LAYER(Swish, SwishLayer);

}  // namespace cortado
