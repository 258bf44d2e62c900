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
#include "cortado/gpu.hpp"
#include "cortado/kernels/dense.hpp"
#include "cortado/layer_registry.hpp"

namespace cortado {

class SoftmaxWithLossLayer : public LossLayer {
 public:
  using LossLayer::LossLayer;
  const char* type() const override { return "SoftmaxWithLoss"; }
  int ExactNumTopBlobs() const override { return -1; }
  int MinTopBlobs() const override { return 1; }
  int MaxTopBlobs() const override { return 2; }
  bool HasGpuImplementation() const override { return BuiltWithCuda(); }
  LabelRule label_rule() const override { return {1, channels_, has_ignore_label_, ignore_label_}; }
  [[noreturn]] void FailBadLabelAt(float label, int64_t position) const override { FailBadLabel(label, position); }
  bool IsCapturable() const override { return labels_checked_upstream(); }

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override {
    LossLayer::LayerSetUp(bottom, top);
    const LossParameter& lp = param_.loss_param();
    has_ignore_label_ = lp.has_ignore_label();
    ignore_label_ = lp.ignore_label();
    normalization_ = lp.normalization();
    if (!lp.has_normalization() && lp.has_normalize())
      normalization_ = lp.normalize() ? LossParameter::VALID : LossParameter::BATCH_SIZE;
    // The probabilities go to the second top when there is one, else to a scratch buffer.
    prob_ = top.size() > 1 ? top[1] : AddScratch();
    if (ctx_.device() == Device::kGPU) work_ = AddScratch();
    LayerParameter inner;
    inner.set_name(name() + "/softmax");
    inner.set_type("Softmax");
    inner.set_phase(param_.phase());
    *inner.mutable_softmax_param() = param_.softmax_param();
    softmax_ = LayerRegistry::Create(inner, ctx_);
    softmax_bottom_ = {bottom[0]};
    softmax_top_ = {prob_};
    softmax_->SetUp(softmax_bottom_, softmax_top_);
  }

  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    LossLayer::Reshape(bottom, top);
    softmax_bottom_[0] = bottom[0];
    softmax_->Reshape(softmax_bottom_, softmax_top_);
    const int axis = bottom[0]->CanonicalAxisIndex(param_.softmax_param().axis());
    channels_ = bottom[0]->shape(axis);
    outer_ = bottom[0]->count(0, axis);
    inner_ = bottom[0]->count(axis + 1);
    CORTADO_REQUIRE(outer_ * inner_ == bottom[1]->count(), Describe(), ": needs one label per ",
                    "score position: scores ", bottom[0]->shape_string(), " (softmax axis ", axis,
                    ") want ", outer_ * inner_, " labels, but the label blob is ",
                    bottom[1]->shape_string());
    if (work_) work_->Reshape(std::vector<int>{static_cast<int>(kSoftmaxLossWorkFloats)});
  }

  std::vector<Scratch> scratch_buffers() const override {
    std::vector<Scratch> out = Layer::scratch_buffers();
    for (const Scratch& s : softmax_->scratch_buffers()) out.push_back(s);
    return out;
  }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    softmax_bottom_[0] = bottom[0];
    softmax_->Forward(softmax_bottom_, softmax_top_);
    const float* p = prob_->data();
    const float* label = bottom[1]->data();
    const int64_t dim = channels_ * inner_;
    double loss = 0;
    int64_t valid = 0;
    for (int64_t i = 0; i < outer_; ++i) {
      for (int64_t j = 0; j < inner_; ++j) {
        const int l = static_cast<int>(label[i * inner_ + j]);
        if (has_ignore_label_ && l == ignore_label_) continue;
        if (l < 0 || l >= channels_) FailBadLabel(label[i * inner_ + j], i * inner_ + j);
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
        const int l = static_cast<int>(label[i * inner_ + j]);
        if (has_ignore_label_ && l == ignore_label_) {
          for (int64_t c = 0; c < channels_; ++c) dxi[c * inner_ + j] = 0.0f;
        } else {
          dxi[l * inner_ + j] -= scale;
        }
      }
    }
  }

  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    softmax_bottom_[0] = bottom[0];
    softmax_->Forward(softmax_bottom_, softmax_top_);
    float bad_label = 0;
    const int64_t at = SoftmaxLossForwardGpu(
        ctx_, outer_, channels_, inner_, prob_->data(), bottom[1]->data(), has_ignore_label_, ignore_label_,
        normalization_ == LossParameter::VALID, FixedNormalizer(), work_->data(), top[0]->data(), BadLabelOut(&bad_label));
    if (at >= 0) FailBadLabel(bad_label, at);
  }

  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    SoftmaxLossBackwardGpu(ctx_, outer_, channels_, inner_, prob_->data(), bottom[1]->data(), has_ignore_label_,
                           ignore_label_, top[0]->diff(), work_->data(), bottom[0]->diff());
  }

 private:
  // One message for both devices.
  [[noreturn]] void FailBadLabel(float label, int64_t position) const {
    cortado::FailBadLabel(Describe(), label, position, channels_,
                          has_ignore_label_ ? " or ignore_label " + std::to_string(ignore_label_) : "");
  }

  double Normalizer() const { return LossNormalizer(normalization_, outer_, inner_, valid_count_); }
  // The normalizer of every mode but VALID (whose count is known only after the forward pass).
  double FixedNormalizer() const { return FixedLossNormalizer(normalization_, outer_, inner_); }

  std::unique_ptr<Layer> softmax_;
  BlobVec softmax_bottom_, softmax_top_;
  Blob* prob_ = nullptr;
  Blob* work_ = nullptr;  // GPU nets: the kernels' partial sums, normalizer and bad-label flag
  bool has_ignore_label_ = false;
  int ignore_label_ = 0;
  LossParameter::NormalizationMode normalization_ = LossParameter::VALID;
  int64_t channels_ = 0, outer_ = 0, inner_ = 0, valid_count_ = 0;
};

CORTADO_REGISTER_LAYER(SoftmaxWithLoss, SoftmaxWithLossLayer);

}  // namespace cortado
