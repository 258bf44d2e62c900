// softmax_loss.cpp — SoftmaxWithLoss: softmax of the scores, then the multinomial logistic loss.
// Bottoms: scores (outer × C × inner, C = shape(softmax_param.axis)) and labels (outer·inner values
// in [0, C), or loss_param.ignore_label). Tops: the scalar loss and, optionally, the probabilities
// (shape of the scores).
//   loss = −Σ log(max(p[label], FLT_MIN)) / normalizer
//   dscores = (p − onehot(label)) · dloss / normalizer; 0 at ignored positions; labels get none.
// normalizer (loss_param.normalization): VALID = positions not ignored (default),
// FULL = outer·inner, BATCH_SIZE = outer, NONE = 1; at least 1. Legacy `normalize: false` (without
// `normalization`) means BATCH_SIZE.
// GPU: the inner Softmax's kernels, then kernels/dense.hpp (softmax_loss.cu), which keep the
// normalizer on the device and flag a bad label for the host to report as the CPU does.
#include <algorithm>
#include <cfloat>
#include <cmath>

#include "cortado/error.hpp"
#include "cortado/kernels/dense.hpp"
#include "cortado/layer_registry.hpp"
#include "softmax_loss_base.hpp"

namespace cortado {

class SoftmaxWithLossLayer : public SoftmaxLossBase {
 public:
  using SoftmaxLossBase::SoftmaxLossBase;
  const char* type() const override { return "SoftmaxWithLoss"; }

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override {
    LossLayer::LayerSetUp(bottom, top);
    SetUpSoftmax(bottom, top, param_.softmax_param().axis());
    const LossParameter& lp = param_.loss_param();
    if (!lp.has_normalization() && lp.has_normalize())
      normalization_ = lp.normalize() ? LossParameter::VALID : LossParameter::BATCH_SIZE;
    if (ctx_.device() == Device::kGPU) work_ = AddStepScratch();  // the normalizer from Forward to Backward
  }

  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    ReshapeSoftmax(bottom, top, param_.softmax_param().axis(), "softmax axis");
    if (work_) work_->Reshape(std::vector<int>{static_cast<int>(kSoftmaxLossWorkFloats)});
  }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    ForwardSoftmax(bottom);
    const float* p = prob_->data();
    const float* label = bottom[1]->data();
    const int64_t dim = channels_ * inner_;
    double loss = 0;
    int64_t valid = 0;
    for (int64_t i = 0; i < outer_; ++i) {
      for (int64_t j = 0; j < inner_; ++j) {
        const int l = LabelOf(label[i * inner_ + j]);
        if (has_ignore_label_ && l == ignore_label_) continue;
        if (l < 0 || l >= channels_) FailBadLabelAt(label[i * inner_ + j], i * inner_ + j);
        loss -= std::log(std::max(p[i * dim + l * inner_ + j], FLT_MIN));
        ++valid;
      }
    }
    valid_count_ = valid;
    top[0]->data()[0] = static_cast<float>(loss / Normalizer());
  }

  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    // Labels have no gradient; a request for one (propagate_down[1]) is ignored.
    if (!propagate_down[0]) return;
    const float* p = prob_->data();
    const float* label = bottom[1]->data();
    float* dx = bottom[0]->diff();
    const int64_t dim = channels_ * inner_;
    const float scale = top[0]->diff()[0] / static_cast<float>(Normalizer());
    for (int64_t i = 0; i < outer_; ++i) {
      const float* pi = p + i * dim;
      float* dxi = dx + i * dim;
      for (int64_t k = 0; k < dim; ++k) dxi[k] = scale * pi[k];
      for (int64_t j = 0; j < inner_; ++j) {
        const int l = LabelOf(label[i * inner_ + j]);
        if (has_ignore_label_ && l == ignore_label_) {
          for (int64_t c = 0; c < channels_; ++c) dxi[c * inner_ + j] = 0.0f;
        } else {
          dxi[l * inner_ + j] -= scale;
        }
      }
    }
  }

  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    ForwardSoftmax(bottom);
    float bad_label = 0;
    const int64_t at = SoftmaxLossForwardGpu(
        ctx_, outer_, channels_, inner_, prob_->data(), bottom[1]->data(), has_ignore_label_, ignore_label_,
        normalization_ == LossParameter::VALID, FixedNormalizer(), work_->data(), top[0]->data(), BadLabelOut(&bad_label));
    if (at >= 0) FailBadLabelAt(bad_label, at);
  }

  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    SoftmaxLossBackwardGpu(ctx_, outer_, channels_, inner_, prob_->data(), bottom[1]->data(), has_ignore_label_,
                           ignore_label_, top[0]->diff(), work_->data(), bottom[0]->diff());
  }

 private:
  Blob* work_ = nullptr;  // GPU nets: the kernels' partial sums, normalizer and bad-label flag
};

CORTADO_REGISTER_LAYER(SoftmaxWithLoss, SoftmaxWithLossLayer);

}  // namespace cortado
