// elu.cpp — ELU (elu_param.alpha = 1): y = x > 0 ? x : alpha·(e^x − 1).
// Backward: dx = dy · (x > 0 ? 1 : alpha + y), reading x and y as Caffe does. Runs in place (top ==
// bottom) as well when alpha ≥ 0: the bottom then holds y, and y > 0 exactly where x > 0 (the Net
// runs a negative alpha out of place).
// GPU: the same two loops as kernels (cuda/activations.cu).
#include <cmath>

#include "cortado/gpu.hpp"
#include "cortado/kernels/activation.hpp"
#include "cortado/layer_registry.hpp"

namespace cortado {

class ELULayer : public NeuronLayer {
 public:
  using NeuronLayer::NeuronLayer;
  const char* type() const override { return "ELU"; }
  bool HasGpuImplementation() const override { return BuiltWithCuda(); }
  // In place x's test reads y, which has x's sign only when alpha ≥ 0.
  bool InPlaceSafe() const override { return param_.elu_param().alpha() >= 0.0f; }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const float alpha = param_.elu_param().alpha();
    const float* x = bottom[0]->data();
    float* y = top[0]->data();
    for (int64_t i = 0; i < bottom[0]->count(); ++i) y[i] = x[i] > 0 ? x[i] : alpha * std::expm1(x[i]);
  }

  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const float alpha = param_.elu_param().alpha();
    const float* x = bottom[0]->data();
    const float* y = top[0]->data();
    const float* dy = top[0]->diff();
    float* dx = bottom[0]->diff();
    for (int64_t i = 0; i < bottom[0]->count(); ++i) dx[i] = x[i] > 0 ? dy[i] : dy[i] * (alpha + y[i]);
  }

  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    ELUForwardGpu(ctx_, bottom[0]->count(), param_.elu_param().alpha(), bottom[0]->data(), top[0]->data());
  }

  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    ELUBackwardGpu(ctx_, bottom[0]->count(), param_.elu_param().alpha(), bottom[0]->data(), top[0]->data(),
                   top[0]->diff(), bottom[0]->diff());
  }
};

CORTADO_REGISTER_LAYER(ELU, ELULayer);

}  // namespace cortado
