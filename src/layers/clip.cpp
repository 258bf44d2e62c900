// clip.cpp — Clip (clip_param: min, max; both required): y = max(min, min(x, max)).
// Backward: dx = dy where min ≤ x ≤ max (bounds included, as in Caffe), else 0. min ≤ max.
// Backward needs x: run in place (top == bottom), Forward first keeps a copy of x in a scratch buffer
// (Caffe reads the clipped values there and passes every gradient).
// GPU: the same loops as kernels (cuda/activations.cu).
#include <algorithm>

#include "cortado/error.hpp"
#include "cortado/gpu.hpp"
#include "cortado/kernels/activation.hpp"
#include "cortado/layer_registry.hpp"
#include "cortado/math.hpp"
#include "cortado/math_gpu.hpp"

namespace cortado {

class ClipLayer : public NeuronLayer {
 public:
  using NeuronLayer::NeuronLayer;
  const char* type() const override { return "Clip"; }
  bool HasGpuImplementation() const override { return BuiltWithCuda(); }
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
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const float* x = bottom[0]->data();
    float* y = top[0]->data();
    const int64_t n = bottom[0]->count();
    SaveInput(bottom);
    for (int64_t i = 0; i < n; ++i) y[i] = std::max(lo_, std::min(x[i], hi_));
  }

  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const float* x = ForwardInput(bottom);
    const float* dy = top[0]->diff();
    float* dx = bottom[0]->diff();
    for (int64_t i = 0; i < bottom[0]->count(); ++i) dx[i] = dy[i] * static_cast<float>(x[i] >= lo_ && x[i] <= hi_);
  }

  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    const int64_t n = bottom[0]->count();
    SaveInput(bottom);
    ClipForwardGpu(ctx_, n, lo_, hi_, bottom[0]->data(), top[0]->data());
  }

  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const float* x = ForwardInput(bottom);
    ClipBackwardGpu(ctx_, bottom[0]->count(), lo_, hi_, x, top[0]->diff(), bottom[0]->diff());
  }

 private:
  float lo_ = 0, hi_ = 0;
};

CORTADO_REGISTER_LAYER(Clip, ClipLayer);

}  // namespace cortado
