// relu.cpp — ReLU: y = max(0, x) + negative_slope · min(0, x).
// Backward: dx = dy · (x > 0 ? 1 : negative_slope). Runs in place (top == bottom) as well when
// negative_slope ≥ 0 (then y > 0 exactly where x > 0); the Net runs a negative slope out of place.
// GPU: the same two loops as kernels (cuda/relu.cu).
#include "cortado/gpu.hpp"
#include "cortado/kernels/neuron.hpp"
#include "cortado/layer_registry.hpp"

namespace cortado {

class ReLULayer : public NeuronLayer {
 public:
  using NeuronLayer::NeuronLayer;
  const char* type() const override { return "ReLU"; }
  bool HasGpuImplementation() const override { return BuiltWithCuda(); }
  // Backward reads x (in place: y, which has x's sign only when slope ≥ 0), never y as such.
  bool BackwardReadsTopData(int) const override { return false; }
  bool InPlaceSafe() const override { return param_.relu_param().negative_slope() >= 0.0f; }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const float slope = param_.relu_param().negative_slope();
    const float* x = bottom[0]->data();
    float* y = top[0]->data();
    for (int64_t i = 0; i < bottom[0]->count(); ++i) y[i] = x[i] > 0 ? x[i] : slope * x[i];
  }

  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const float slope = param_.relu_param().negative_slope();
    // In place, bottom data already holds y; y > 0 exactly where x > 0 (for slope ≥ 0).
    const float* x = bottom[0]->data();
    const float* dy = top[0]->diff();
    float* dx = bottom[0]->diff();
    for (int64_t i = 0; i < bottom[0]->count(); ++i) dx[i] = dy[i] * (x[i] > 0 ? 1.0f : slope);
  }

  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    ReLUForwardGpu(ctx_, bottom[0]->count(), param_.relu_param().negative_slope(), bottom[0]->data(),
                   top[0]->data());
  }

  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    ReLUBackwardGpu(ctx_, bottom[0]->count(), param_.relu_param().negative_slope(), bottom[0]->data(),
                    top[0]->diff(), bottom[0]->diff());
  }
};

CORTADO_REGISTER_LAYER(ReLU, ReLULayer);

}  // namespace cortado
