// softmax.cpp — Softmax along one axis (softmax_param.axis, default 1).
// Bottom and top (outer × C × inner), C = shape(axis): y[c] = e^(x[c] − max) / Σ_k e^(x[k] − max),
// independently for every outer and inner position. Backward: dx = (dy − Σ_c dy·y) · y.
// Subtracting the max keeps exp from overflowing. In place (top == bottom) works too.
// GPU: kernels/dense.hpp (softmax.cu); the scratch buffer is used by the CPU code only.
#include <algorithm>
#include <cmath>

#include "cortado/error.hpp"
#include "cortado/kernels/dense.hpp"
#include "cortado/layer_registry.hpp"

namespace cortado {

class SoftmaxLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Softmax"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }
  bool BackwardReadsBottomData(int) const override { return false; }  // from y alone
  bool InPlaceSafe() const override { return true; }

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override {
    scale_ = AddStepScratch();  // per inner position: the max, then 1 / Σ, or Σ dy·y in Backward
  }

  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    const int axis = param_.softmax_param().axis();
    const int n = bottom[0]->num_axes();
    CORTADO_REQUIRE(axis >= -n && axis < n, Describe(), ": softmax_param.axis ", axis,
                    " is out of range for a bottom of shape ", bottom[0]->shape_string());
    axis_ = bottom[0]->CanonicalAxisIndex(axis);
    channels_ = bottom[0]->shape(axis_);
    outer_ = bottom[0]->count(0, axis_);
    inner_ = bottom[0]->count(axis_ + 1);
    top[0]->ReshapeLike(*bottom[0]);
    scale_->Reshape(std::vector<int>{static_cast<int>(inner_)});
  }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const int64_t C = channels_, inner = inner_, dim = C * inner;
    float* s = scale_->data();
    for (int64_t i = 0; i < outer_; ++i) {
      const float* x = bottom[0]->data() + i * dim;
      float* y = top[0]->data() + i * dim;
      std::copy(x, x + inner, s);
      for (int64_t c = 1; c < C; ++c)
        for (int64_t j = 0; j < inner; ++j) s[j] = std::max(s[j], x[c * inner + j]);
      for (int64_t c = 0; c < C; ++c)
        for (int64_t j = 0; j < inner; ++j) y[c * inner + j] = std::exp(x[c * inner + j] - s[j]);
      std::fill(s, s + inner, 0.0f);
      for (int64_t c = 0; c < C; ++c)
        for (int64_t j = 0; j < inner; ++j) s[j] += y[c * inner + j];
      for (int64_t j = 0; j < inner; ++j) s[j] = 1.0f / s[j];
      for (int64_t c = 0; c < C; ++c)
        for (int64_t j = 0; j < inner; ++j) y[c * inner + j] *= s[j];
    }
  }

  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const int64_t C = channels_, inner = inner_, dim = C * inner;
    float* s = scale_->data();
    for (int64_t i = 0; i < outer_; ++i) {
      const float* y = top[0]->data() + i * dim;
      const float* dy = top[0]->diff() + i * dim;
      float* dx = bottom[0]->diff() + i * dim;
      std::fill(s, s + inner, 0.0f);
      for (int64_t c = 0; c < C; ++c)
        for (int64_t j = 0; j < inner; ++j) s[j] += dy[c * inner + j] * y[c * inner + j];
      for (int64_t c = 0; c < C; ++c)
        for (int64_t j = 0; j < inner; ++j)
          dx[c * inner + j] = (dy[c * inner + j] - s[j]) * y[c * inner + j];
    }
  }

  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    SoftmaxForwardGpu(ctx_, outer_, channels_, inner_, bottom[0]->data(), top[0]->data());
  }

  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    SoftmaxBackwardGpu(ctx_, outer_, channels_, inner_, top[0]->data(), top[0]->diff(), bottom[0]->diff());
  }

 private:
  Blob* scale_ = nullptr;
  int axis_ = 1;
  int64_t channels_ = 0, outer_ = 0, inner_ = 0;
};

CORTADO_REGISTER_LAYER(Softmax, SoftmaxLayer);

}  // namespace cortado
