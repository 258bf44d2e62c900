// sigmoid_cross_entropy_loss.cpp — SigmoidCrossEntropyLoss: the cross-entropy of sigmoid(x) against
// targets t in [0, 1]. Bottoms: scores x (N × …) and targets t (the same count). Top: the scalar loss.
//   loss = Σ −[t·log σ(x) + (1 − t)·log(1 − σ(x))] / normalizer
//        = Σ [max(x, 0) − x·t + log(1 + e^−|x|)] / normalizer   (the stable form computed)
//   dx = (σ(x) − t) · dloss / normalizer; 0 where static_cast<int>(t) == loss_param.ignore_label;
//   the targets get no gradient.
// normalizer (loss_param.normalization): VALID = positions not ignored (default), FULL = N·(count/N),
// BATCH_SIZE = N, NONE = 1; at least 1. Legacy `normalize: false` (without `normalization`) means
// BATCH_SIZE. σ(x) is computed where needed (Caffe keeps it in an inner Sigmoid layer's top).
// GPU: kernels/loss.hpp (cuda/losses.cu), which write the loss and keep the normalizer on the device.
#include <algorithm>
#include <cmath>

#include "cortado/error.hpp"
#include "cortado/kernels/loss.hpp"
#include "cortado/layer_registry.hpp"

namespace cortado {

class SigmoidCrossEntropyLossLayer : public LossLayer {
 public:
  using LossLayer::LossLayer;
  const char* type() const override { return "SigmoidCrossEntropyLoss"; }
  bool BackwardReadsTopData(int) const override { return false; }  // dloss only

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override {
    LossLayer::LayerSetUp(bottom, top);
    const LossParameter& lp = param_.loss_param();
    has_ignore_label_ = lp.has_ignore_label();
    ignore_label_ = lp.ignore_label();
    normalization_ = lp.normalization();
    if (!lp.has_normalization() && lp.has_normalize())
      normalization_ = lp.normalize() ? LossParameter::VALID : LossParameter::BATCH_SIZE;
    if (ctx_.device() == Device::kGPU) work_ = AddStepScratch();  // the normalizer from Forward to Backward
  }

  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    LossLayer::Reshape(bottom, top);
    CORTADO_REQUIRE(bottom[0]->count() == bottom[1]->count(), Describe(),
                    ": scores and targets need the same count, got ", bottom[0]->shape_string(), " and ",
                    bottom[1]->shape_string());
    outer_ = bottom[0]->shape(0);
    inner_ = bottom[0]->count(1);
    if (work_) work_->Reshape(std::vector<int>{static_cast<int>(kLossWorkFloats)});
  }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const float* x = bottom[0]->data();
    const float* t = bottom[1]->data();
    const int64_t n = bottom[0]->count();
    double loss = 0;
    int64_t valid = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (Ignored(t[i])) continue;
      loss += std::max(x[i], 0.0f) - x[i] * t[i] + std::log1p(std::exp(-std::fabs(x[i])));
      ++valid;
    }
    valid_count_ = valid;
    top[0]->data()[0] = static_cast<float>(loss / Normalizer());
  }

  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    // Targets have no gradient; a request for one (propagate_down[1]) is ignored.
    if (!propagate_down[0]) return;
    const float* x = bottom[0]->data();
    const float* t = bottom[1]->data();
    float* dx = bottom[0]->diff();
    const int64_t n = bottom[0]->count();
    const float scale = top[0]->diff()[0] / static_cast<float>(Normalizer());
    for (int64_t i = 0; i < n; ++i)
      dx[i] = Ignored(t[i]) ? 0.0f : scale * (1.0f / (1.0f + std::exp(-x[i])) - t[i]);
  }

  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    SigmoidCrossEntropyLossForwardGpu(ctx_, bottom[0]->count(), bottom[0]->data(), bottom[1]->data(),
                                      has_ignore_label_, ignore_label_, normalization_ == LossParameter::VALID,
                                      FixedNormalizer(), work_->data(), top[0]->data());
  }

  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    SigmoidCrossEntropyLossBackwardGpu(ctx_, bottom[0]->count(), bottom[0]->data(), bottom[1]->data(),
                                       has_ignore_label_, ignore_label_, top[0]->diff(), work_->data(),
                                       bottom[0]->diff());
  }

 private:
  bool Ignored(float target) const { return has_ignore_label_ && LabelOf(target) == ignore_label_; }

  double Normalizer() const { return LossNormalizer(normalization_, outer_, inner_, valid_count_); }
  // The normalizer of every mode but VALID (whose count is known only after the forward pass).
  double FixedNormalizer() const { return FixedLossNormalizer(normalization_, outer_, inner_); }

  Blob* work_ = nullptr;  // GPU nets: the kernels' partial sums and normalizer
  bool has_ignore_label_ = false;
  int ignore_label_ = 0;
  LossParameter::NormalizationMode normalization_ = LossParameter::VALID;
  int64_t outer_ = 0, inner_ = 0, valid_count_ = 0;
};

CORTADO_REGISTER_LAYER(SigmoidCrossEntropyLoss, SigmoidCrossEntropyLossLayer);

}  // namespace cortado
