// tanh.cpp — TanH: y = tanh(x).
// Backward from the top data: dx = dy · (1 − y²). Runs in place (top == bottom) as well.
// GPU: the same two loops as kernels (cuda/tanh.cu).
#include <cmath>

#include "cortado/gpu.hpp"
#include "cortado/kernels/neuron.hpp"
#include "cortado/layer_registry.hpp"

namespace cortado {

class TanHLayer : public NeuronLayer {
 public:
  using NeuronLayer::NeuronLayer;
  const char* type() const override { return "TanH"; }
  bool HasGpuImplementation() const override { return BuiltWithCuda(); }
  bool BackwardReadsBottomData(int) const override { return false; }  // from y alone
  bool InPlaceSafe() const override { return true; }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const float* x = bottom[0]->data();
    float* y = top[0]->data();
    const int64_t n = bottom[0]->count();
    for (int64_t i = 0; i < n; ++i) y[i] = std::tanh(x[i]);
  }

  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const float* y = top[0]->data();
    const float* dy = top[0]->diff();
    float* dx = bottom[0]->diff();
    const int64_t n = top[0]->count();
    for (int64_t i = 0; i < n; ++i) dx[i] = dy[i] * (1.0f - y[i] * y[i]);
  }

  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    TanHForwardGpu(ctx_, bottom[0]->count(), bottom[0]->data(), top[0]->data());
  }

  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    TanHBackwardGpu(ctx_, top[0]->count(), top[0]->data(), top[0]->diff(), bottom[0]->diff());
  }
};

CORTADO_REGISTER_LAYER(TanH, TanHLayer);

}  // namespace cortado
