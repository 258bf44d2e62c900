// contrastive_loss.cpp — ContrastiveLoss (Hadsell, Chopra & LeCun 2006): pulls similar pairs together
// and pushes dissimilar ones at least `margin` apart. Bottoms: a and b (N × C, or N × C × 1 × 1) and
// the pair labels y (N values; a pair is similar when static_cast<int>(y) != 0). Top: the scalar loss.
//   d_i² = ‖a_i − b_i‖²
//   loss = Σ_i [y_i·d_i² + (1 − y_i)·max(margin − d_i, 0)²] / (2N)
//   legacy_version: the dissimilar term is max(margin − d_i², 0) instead.
//   da_i = dloss/N · (a_i − b_i)                                      similar
//        = −dloss/N · (margin − d_i)/(d_i + 1e-4) · (a_i − b_i)      dissimilar, margin − d_i > 0
//        = −dloss/N · (a_i − b_i)                                     dissimilar, legacy, margin − d_i² > 0
//        = 0                                                          otherwise;   db = −da; y gets none.
// contrastive_loss_param: margin (default 1), legacy_version (default false). d_i² is kept for the
// backward pass in a scratch blob.
// GPU: kernels/loss.hpp (cuda/losses.cu), which write the loss on the device.
#include <algorithm>
#include <cmath>

#include "cortado/error.hpp"
#include "cortado/kernels/loss.hpp"
#include "cortado/layer_registry.hpp"

namespace cortado {

class ContrastiveLossLayer : public LossLayer {
 public:
  using LossLayer::LossLayer;
  const char* type() const override { return "ContrastiveLoss"; }
  int ExactNumBottomBlobs() const override { return 3; }
  bool AllowForceBackward(int bottom_index) const override { return bottom_index != 2; }
  bool BackwardReadsTopData(int) const override { return false; }  // dloss only

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override {
    LossLayer::LayerSetUp(bottom, top);
    margin_ = param_.contrastive_loss_param().margin();
    legacy_ = param_.contrastive_loss_param().legacy_version();
    dist_sq_ = AddStepScratch();
    if (ctx_.device() == Device::kGPU) work_ = AddStepScratch();
  }

  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    LossLayer::Reshape(bottom, top);
    const Blob& a = *bottom[0];
    const Blob& b = *bottom[1];
    CORTADO_REQUIRE(a.num_axes() >= 2 && a.count(2) == 1 && b.num_axes() >= 2 && b.count(2) == 1 &&
                        a.shape(0) == b.shape(0) && a.shape(1) == b.shape(1),
                    Describe(), ": needs two inputs of the same N × C (× 1 × 1) shape, got ", a.shape_string(),
                    " and ", b.shape_string());
    CORTADO_REQUIRE(bottom[2]->count() == a.shape(0), Describe(), ": needs one pair label per sample: ",
                    a.shape(0), " samples, but the label blob is ", bottom[2]->shape_string());
    num_ = a.shape(0);
    channels_ = a.shape(1);
    dist_sq_->Reshape(std::vector<int>{static_cast<int>(num_)});
    if (work_) work_->Reshape(std::vector<int>{static_cast<int>(kLossWorkFloats)});
  }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const float* a = bottom[0]->data();
    const float* b = bottom[1]->data();
    const float* y = bottom[2]->data();
    float* dist_sq = dist_sq_->data();
    double loss = 0;
    for (int64_t i = 0; i < num_; ++i) {
      float d2 = 0;
      for (int64_t c = 0; c < channels_; ++c) {
        const float d = a[i * channels_ + c] - b[i * channels_ + c];
        d2 += d * d;
      }
      dist_sq[i] = d2;
      if (Similar(y[i])) {
        loss += d2;
      } else if (legacy_) {
        loss += std::max(margin_ - d2, 0.0f);
      } else {
        const float m = std::max(margin_ - std::sqrt(d2), 0.0f);
        loss += m * m;
      }
    }
    top[0]->data()[0] = static_cast<float>(loss / (2.0 * std::max<int64_t>(num_, 1)));
  }

  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    const float* a = bottom[0]->data();
    const float* b = bottom[1]->data();
    const float* y = bottom[2]->data();
    const float* dist_sq = dist_sq_->data();
    for (int k = 0; k < 2; ++k) {
      if (!propagate_down[k]) continue;
      const float alpha = (k == 0 ? 1.0f : -1.0f) * top[0]->diff()[0] / static_cast<float>(num_);
      float* dx = bottom[k]->diff();
      for (int64_t i = 0; i < num_; ++i) {
        const float scale = Scale(Similar(y[i]), dist_sq[i], alpha);
        for (int64_t c = 0; c < channels_; ++c)
          dx[i * channels_ + c] = scale * (a[i * channels_ + c] - b[i * channels_ + c]);
      }
    }
  }

  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    ContrastiveLossForwardGpu(ctx_, num_, channels_, bottom[0]->data(), bottom[1]->data(), bottom[2]->data(), margin_,
                              legacy_, dist_sq_->data(), work_->data(), top[0]->data());
  }

  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    for (int k = 0; k < 2; ++k) {
      if (!propagate_down[k]) continue;
      ContrastiveLossBackwardGpu(ctx_, num_, channels_, bottom[0]->data(), bottom[1]->data(), bottom[2]->data(),
                                 dist_sq_->data(), margin_, legacy_, top[0]->diff(), k == 0 ? 1.0f : -1.0f,
                                 bottom[k]->diff());
    }
  }

 private:
  // static_cast<int>(y) != 0, with NaN and values outside int's range (INT_MIN on x86) similar.
  static bool Similar(float y) { return !(y > -1.0f && y < 1.0f); }

  // The factor of (a_i − b_i) in da_i, alpha = ±dloss/N.
  float Scale(bool similar, float dist_sq, float alpha) const {
    if (similar) return alpha;
    if (legacy_) return margin_ - dist_sq > 0.0f ? -alpha : 0.0f;
    const float dist = std::sqrt(dist_sq);
    const float mdist = margin_ - dist;
    return mdist > 0.0f ? -alpha * mdist / (dist + 1e-4f) : 0.0f;
  }

  Blob* dist_sq_ = nullptr;  // ‖a_i − b_i‖², from the forward pass
  Blob* work_ = nullptr;     // GPU nets: the kernels' partial sums
  float margin_ = 1.0f;
  bool legacy_ = false;
  int64_t num_ = 0, channels_ = 0;
};

CORTADO_REGISTER_LAYER(ContrastiveLoss, ContrastiveLossLayer);

}  // namespace cortado
