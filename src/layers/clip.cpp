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

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override {
    const ClipParameter& p = param_.clip_param();
    CORTADO_REQUIRE(p.has_min() && p.has_max(), Describe(), ": clip_param needs both min and max");
    lo_ = p.min();
    hi_ = p.max();
    CORTADO_REQUIRE(lo_ <= hi_, Describe(), ": clip_param.min (", lo_, ") is greater than max (", hi_, ")");
    if (top[0] == bottom[0]) bottom_copy_ = AddScratch();
  }

  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    NeuronLayer::Reshape(bottom, top);
    if (bottom_copy_) bottom_copy_->ReshapeLike(*bottom[0]);
  }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const float* x = bottom[0]->data();
    float* y = top[0]->data();
    const int64_t n = bottom[0]->count();
    if (bottom_copy_) cpu_copy(n, x, bottom_copy_->data());
    for (int64_t i = 0; i < n; ++i) y[i] = std::max(lo_, std::min(x[i], hi_));
  }

  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const float* x = (bottom_copy_ ? bottom_copy_ : bottom[0])->data();
    const float* dy = top[0]->diff();
    float* dx = bottom[0]->diff();
    for (int64_t i = 0; i < bottom[0]->count(); ++i) dx[i] = dy[i] * static_cast<float>(x[i] >= lo_ && x[i] <= hi_);
  }

  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    const int64_t n = bottom[0]->count();
    if (bottom_copy_) gpu_copy(ctx_, n, bottom[0]->data(), bottom_copy_->data());
    ClipForwardGpu(ctx_, n, lo_, hi_, bottom[0]->data(), top[0]->data());
  }

  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const float* x = (bottom_copy_ ? bottom_copy_ : bottom[0])->data();
    ClipBackwardGpu(ctx_, bottom[0]->count(), lo_, hi_, x, top[0]->diff(), bottom[0]->diff());
  }

 private:
  float lo_ = 0, hi_ = 0;
  Blob* bottom_copy_ = nullptr;  // x, when run in place
};

CORTADO_REGISTER_LAYER(Clip, ClipLayer);

}  // namespace cortado
