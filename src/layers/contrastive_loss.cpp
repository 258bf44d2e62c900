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
// The arithmetic is losses_math.hpp's, on either device: the loss top is written where the context
// lives, and the backward pass reads dloss there.
#include "cortado/error.hpp"
#include "cortado/layer_registry.hpp"
#include "losses_math.hpp"

namespace cortado {

class ContrastiveLossLayer : public EitherDevice<LossLayer> {
 public:
  using EitherDevice::EitherDevice;
  const char* type() const override { return "ContrastiveLoss"; }
  int ExactNumBottomBlobs() const override { return 3; }
  bool AllowForceBackward(int bottom_index) const override { return bottom_index != 2; }
  bool BackwardReadsTopData(int) const override { return false; }  // dloss only

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override {
    LossLayer::LayerSetUp(bottom, top);
    margin_ = param_.contrastive_loss_param().margin();
    legacy_ = param_.contrastive_loss_param().legacy_version();
    dist_sq_ = AddStepScratch();
    work_ = AddStepScratch();
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
    work_->Reshape(std::vector<int>{static_cast<int>(loss::kWorkFloats)});
  }

 protected:
  void Forward_any(const BlobVec& bottom, const BlobVec& top) override {
    const loss::ContrastiveTerm term{bottom[0]->data(), bottom[1]->data(), bottom[2]->data(), dist_sq_->data(),
                                     channels_, margin_, legacy_};
    loss::SumLoss(ctx_, num_, work_->data(), term, false, 2.0 * static_cast<double>(num_), top[0]->data());
  }

  void Backward_any(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override {
    for (int k = 0; k < 2; ++k) {
      if (!propagate_down[k]) continue;
      const loss::ContrastiveBackward f{bottom[2]->data(), dist_sq_->data(), top[0]->diff(), static_cast<float>(num_),
                                        k == 0 ? 1.0f : -1.0f, margin_, legacy_};
      MapChannels(ctx_, ChannelLayout{1, num_, channels_}, f, bottom[k]->diff(), bottom[0]->data(),
                  bottom[1]->data());
    }
  }

 private:
  Blob* dist_sq_ = nullptr;  // ‖a_i − b_i‖², from the forward pass
  Blob* work_ = nullptr;     // loss_math.hpp's work blob: the sums' scratch
  float margin_ = 1.0f;
  bool legacy_ = false;
  int64_t num_ = 0, channels_ = 0;
};

CORTADO_REGISTER_LAYER(ContrastiveLoss, ContrastiveLossLayer);

}  // namespace cortado
