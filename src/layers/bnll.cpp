// bnll.cpp — BNLL (binomial normal log likelihood, softplus): y = log(1 + e^x), computed as
// x + log(1 + e^−x) for x > 0 so that large inputs do not overflow.
// Backward: dx = dy · e^x / (e^x + 1), with e^min(x, 50) as in Caffe. No parameters.
// Backward needs x: run in place (top == bottom), Forward first keeps a copy of x in a scratch buffer
// (Caffe reads the overwritten bottom there and gets a wrong gradient).
// GPU: the same loops as kernels (cuda/activations.cu).
#include <algorithm>
#include <cmath>

#include "cortado/gpu.hpp"
#include "cortado/kernels/activation.hpp"
#include "cortado/layer_registry.hpp"
#include "cortado/math.hpp"
#include "cortado/math_gpu.hpp"

namespace cortado {

class BNLLLayer : public NeuronLayer {
 public:
  using NeuronLayer::NeuronLayer;
  const char* type() const override { return "BNLL"; }
  bool HasGpuImplementation() const override { return BuiltWithCuda(); }
  bool BackwardReadsTopData(int) const override { return false; }
  bool InPlaceSafe() const override { return true; }  // x kept (KeepInputWhenInPlace)

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override {
    KeepInputWhenInPlace(bottom, top);
  }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const float* x = bottom[0]->data();
    float* y = top[0]->data();
    const int64_t n = bottom[0]->count();
    SaveInput(bottom);
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0 ? x[i] + std::log1p(std::exp(-x[i])) : std::log1p(std::exp(x[i]));
  }

  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const float* x = ForwardInput(bottom);
    const float* dy = top[0]->diff();
    float* dx = bottom[0]->diff();
    for (int64_t i = 0; i < bottom[0]->count(); ++i) {
      const float e = std::exp(std::min(x[i], 50.0f));
      dx[i] = dy[i] * e / (e + 1.0f);
    }
  }

  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    const int64_t n = bottom[0]->count();
    SaveInput(bottom);
    BNLLForwardGpu(ctx_, n, bottom[0]->data(), top[0]->data());
  }

  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const float* x = ForwardInput(bottom);
    BNLLBackwardGpu(ctx_, bottom[0]->count(), x, top[0]->diff(), bottom[0]->diff());
  }
};

CORTADO_REGISTER_LAYER(BNLL, BNLLLayer);

}  // namespace cortado
