// threshold.cpp — Threshold (threshold_param.threshold t = 0): y = x > t ? 1 : 0.
// Not differentiable, and, as in Caffe, it has no backward pass: asking it for a bottom gradient is an
// Error naming the layer (a net that only runs it forward, or with propagate_down: false, is fine).
// Runs in place too. GPU: the same loop as a kernel (cuda/activations.cu).
#include "cortado/error.hpp"
#include "cortado/gpu.hpp"
#include "cortado/kernels/activation.hpp"
#include "cortado/layer_registry.hpp"

namespace cortado {

class ThresholdLayer : public NeuronLayer {
 public:
  using NeuronLayer::NeuronLayer;
  const char* type() const override { return "Threshold"; }
  bool HasGpuImplementation() const override { return BuiltWithCuda(); }
  bool BackwardReadsBottomData(int) const override { return false; }  // no backward pass
  bool BackwardReadsTopData(int) const override { return false; }
  bool InPlaceSafe() const override { return true; }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const float t = param_.threshold_param().threshold();
    const float* x = bottom[0]->data();
    float* y = top[0]->data();
    for (int64_t i = 0; i < bottom[0]->count(); ++i) y[i] = x[i] > t ? 1.0f : 0.0f;
  }

  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (propagate_down[0]) NoBackward();
  }

  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    ThresholdForwardGpu(ctx_, bottom[0]->count(), param_.threshold_param().threshold(), bottom[0]->data(),
                        top[0]->data());
  }

  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (propagate_down[0]) NoBackward();
  }

 private:
  [[noreturn]] void NoBackward() const {
    Fail(Describe(), ": has no backward pass (a step function has no gradient); set propagate_down: false "
         "on it or keep layers that learn out of its bottom's path");
  }
};

CORTADO_REGISTER_LAYER(Threshold, ThresholdLayer);

}  // namespace cortado
