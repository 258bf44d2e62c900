// log.cpp — Log (log_param: base = −1 meaning e, scale = 1, shift = 0): y = log_base(shift + scale·x),
// computed as ln(shift + scale·x) / ln(base).
// Backward: dx = dy · scale / (ln(base) · (shift + scale·x)). base must be positive and not 1.
// Backward needs x: run in place (top == bottom), Forward first keeps a copy of x in a scratch buffer
// (Caffe reads the overwritten bottom there and gets a wrong gradient).
// GPU: the same loops as kernels (cuda/activations.cu).
#include <cmath>

#include "cortado/error.hpp"
#include "cortado/gpu.hpp"
#include "cortado/kernels/activation.hpp"
#include "cortado/layer_registry.hpp"
#include "cortado/math.hpp"
#include "cortado/math_gpu.hpp"

namespace cortado {

class LogLayer : public NeuronLayer {
 public:
  using NeuronLayer::NeuronLayer;
  const char* type() const override { return "Log"; }
  bool HasGpuImplementation() const override { return BuiltWithCuda(); }
  bool BackwardReadsTopData(int) const override { return false; }
  bool InPlaceSafe() const override { return true; }  // x kept (KeepInputWhenInPlace)

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override {
    const LogParameter& p = param_.log_param();
    const float base = p.base();
    CORTADO_REQUIRE(base == -1.0f || (base > 0.0f && base != 1.0f && std::isfinite(base)), Describe(),
                    ": log_param.base must be positive and not 1 (or -1 for e), got ", base);
    const float log_base = base == -1.0f ? 1.0f : std::log(base);
    scale_ = p.scale();
    shift_ = p.shift();
    base_scale_ = 1.0f / log_base;
    num_scale_ = scale_ / log_base;
    KeepInputWhenInPlace(bottom, top);
  }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const float* x = bottom[0]->data();
    float* y = top[0]->data();
    const int64_t n = bottom[0]->count();
    SaveInput(bottom);
    for (int64_t i = 0; i < n; ++i) y[i] = base_scale_ * std::log(shift_ + scale_ * x[i]);
  }

  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const float* x = ForwardInput(bottom);
    const float* dy = top[0]->diff();
    float* dx = bottom[0]->diff();
    for (int64_t i = 0; i < bottom[0]->count(); ++i) dx[i] = dy[i] * (num_scale_ / (shift_ + scale_ * x[i]));
  }

  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    const int64_t n = bottom[0]->count();
    SaveInput(bottom);
    LogForwardGpu(ctx_, n, scale_, shift_, base_scale_, bottom[0]->data(), top[0]->data());
  }

  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const float* x = ForwardInput(bottom);
    LogBackwardGpu(ctx_, bottom[0]->count(), scale_, shift_, num_scale_, x, top[0]->diff(), bottom[0]->diff());
  }

 private:
  float scale_ = 1, shift_ = 0, base_scale_ = 1, num_scale_ = 1;
};

CORTADO_REGISTER_LAYER(Log, LogLayer);

}  // namespace cortado
