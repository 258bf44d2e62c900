// lrn.cpp — LRN (local response normalisation), Caffe's semantics. Bottom and top (N, C, H, W).
//
// Parameters (lrn_param): local_size n (odd, default 5), alpha (1), beta (0.75), k (1), norm_region.
//   ACROSS_CHANNELS: scale = k + alpha / n · Σ x² over the n channels centred on the element's
//                    (clipped to [0, C): missing channels count as zero);
//   WITHIN_CHANNEL:  scale = 1 + alpha / n² · Σ x² over the n × n square centred on the element in its
//                    own plane. This is what Caffe's composed sub-layers compute: Power (x²), AVE
//                    Pooling (kernel n, pad (n − 1)/2, stride 1, whose window is never cut by the
//                    padded border, so it always divides by n², padding counting as zeros), then
//                    Power (shift 1, scale alpha, power −beta) — k is not used, as in Caffe;
//   y = x · scale^(−beta).
// Backward (the windows are symmetric, so the sum runs over the element's own window):
//   dx = dy · scale^(−beta) − 2 · beta · (alpha / n or alpha / n²) · x · Σ_window dy · y / scale.
// The scale is a scratch buffer kept from Forward for Backward. Not in place (Backward reads x and y).
// Each element sums its own window in float, in increasing index order (OpenMP over elements).
// GPU: the same per-element window sums as kernels (cuda/lrn.cu).
#include <algorithm>
#include <cmath>

#include "cortado/error.hpp"
#include "cortado/gpu.hpp"
#include "cortado/kernels/norm.hpp"
#include "cortado/layer_registry.hpp"

namespace cortado {

class LRNLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "LRN"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }
  bool HasGpuImplementation() const override { return BuiltWithCuda(); }

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override {
    const LRNParameter& p = param_.lrn_param();
    CORTADO_REQUIRE(p.local_size() % 2 == 1, Describe(), ": local_size must be odd, got ", p.local_size());
    CORTADO_REQUIRE(top[0] != bottom[0], Describe(), ": cannot run in place; give the top its own name");
    const bool across = p.norm_region() == LRNParameter::ACROSS_CHANNELS;
    const float n = static_cast<float>(p.local_size());
    shape_.size = static_cast<int>(p.local_size());
    shape_.across = across;
    shape_.k = across ? p.k() : 1.0f;
    shape_.coeff = across ? p.alpha() / n : p.alpha() / (n * n);
    shape_.beta = p.beta();
    scale_ = AddStepScratch();
  }

  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    const Blob& x = *bottom[0];
    CORTADO_REQUIRE(x.num_axes() == 4, Describe(), ": the bottom must be 4-D (num, channels, height, width), got ",
                    x.shape_string());
    shape_.num = x.shape(0);
    shape_.channels = x.shape(1);
    shape_.height = x.shape(2);
    shape_.width = x.shape(3);
    top[0]->ReshapeLike(x);
    scale_->ReshapeLike(x);
  }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const float* x = bottom[0]->data();
    float* scale = scale_->data();
    float* y = top[0]->data();
    const int64_t count = bottom[0]->count();
#pragma omp parallel for schedule(static) if (count >= 65536)
    for (int64_t i = 0; i < count; ++i) {
      float sum = 0;
      ForWindow(i, [&](int64_t j) { sum += x[j] * x[j]; });
      scale[i] = shape_.k + shape_.coeff * sum;
      y[i] = x[i] * std::pow(scale[i], -shape_.beta);
    }
  }

  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const float* x = bottom[0]->data();
    const float* y = top[0]->data();
    const float* scale = scale_->data();
    const float* dy = top[0]->diff();
    float* dx = bottom[0]->diff();
    const float factor = 2.0f * shape_.beta * shape_.coeff;
    const int64_t count = bottom[0]->count();
#pragma omp parallel for schedule(static) if (count >= 65536)
    for (int64_t i = 0; i < count; ++i) {
      float sum = 0;
      ForWindow(i, [&](int64_t j) { sum += dy[j] * y[j] / scale[j]; });
      dx[i] = dy[i] * std::pow(scale[i], -shape_.beta) - factor * x[i] * sum;
    }
  }

  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    LrnForwardGpu(ctx_, shape_, bottom[0]->data(), scale_->data(), top[0]->data());
  }

  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    LrnBackwardGpu(ctx_, shape_, bottom[0]->data(), top[0]->data(), scale_->data(), top[0]->diff(),
                   bottom[0]->diff());
  }

 private:
  // Calls visit(j) for every element j in the window of element i, in increasing order of j.
  template <typename Visit>
  void ForWindow(int64_t i, Visit visit) const {
    const int half = shape_.size / 2;
    const int64_t plane = static_cast<int64_t>(shape_.height) * shape_.width;
    if (shape_.across) {
      const int c = static_cast<int>(i / plane % shape_.channels);
      const int lo = std::max(c - half, 0), hi = std::min(c + half, shape_.channels - 1);
      for (int cc = lo; cc <= hi; ++cc) visit(i + (cc - c) * plane);
      return;
    }
    const int64_t base = i - i % plane;
    const int h = static_cast<int>(i % plane / shape_.width), w = static_cast<int>(i % shape_.width);
    const int h_lo = std::max(h - half, 0), h_hi = std::min(h + half, shape_.height - 1);
    const int w_lo = std::max(w - half, 0), w_hi = std::min(w + half, shape_.width - 1);
    for (int hh = h_lo; hh <= h_hi; ++hh)
      for (int ww = w_lo; ww <= w_hi; ++ww) visit(base + static_cast<int64_t>(hh) * shape_.width + ww);
  }

  LrnShape shape_{};
  Blob* scale_ = nullptr;  // k + coeff · Σ_window x², like the bottom
};

CORTADO_REGISTER_LAYER(LRN, LRNLayer);

}  // namespace cortado
