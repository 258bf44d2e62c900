// sigmoid_cross_entropy_loss.cpp — SigmoidCrossEntropyLoss: the cross-entropy of sigmoid(x) against
// targets t in [0, 1]. Bottoms: scores x (N × …) and targets t (the same count). Top: the scalar loss.
//   loss = Σ −[t·log σ(x) + (1 − t)·log(1 − σ(x))] / normalizer
//        = Σ [max(x, 0) − x·t + log(1 + e^−|x|)] / normalizer   (the stable form computed)
//   dx = (σ(x) − t) · dloss / normalizer; 0 where static_cast<int>(t) == loss_param.ignore_label;
//   the targets get no gradient.
// normalizer (loss_param.normalization): VALID = positions not ignored (default), FULL = N·(count/N),
// BATCH_SIZE = N, NONE = 1; at least 1. Legacy `normalize: false` (without `normalization`) means
// BATCH_SIZE. σ(x) is computed where needed (Caffe keeps it in an inner Sigmoid layer's top).
// The arithmetic is losses_math.hpp's, on either device: the loss top and the normalizer are written
// where the context lives (loss_math.hpp's work blob), and the backward pass reads them there.
#include "cortado/error.hpp"
#include "cortado/layer_registry.hpp"
#include "losses_math.hpp"

namespace cortado {

class SigmoidCrossEntropyLossLayer : public EitherDevice<LossLayer> {
 public:
  using EitherDevice::EitherDevice;
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
    work_ = AddStepScratch();  // the normalizer from Forward to Backward
  }

  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    LossLayer::Reshape(bottom, top);
    CORTADO_REQUIRE(bottom[0]->count() == bottom[1]->count(), Describe(),
                    ": scores and targets need the same count, got ", bottom[0]->shape_string(), " and ",
                    bottom[1]->shape_string());
    outer_ = bottom[0]->shape(0);
    inner_ = bottom[0]->count(1);
    work_->Reshape(std::vector<int>{static_cast<int>(loss::kWorkFloats)});
  }

 protected:
  void Forward_any(const BlobVec& bottom, const BlobVec& top) override {
    const loss::SigmoidCrossEntropyTerm term{bottom[0]->data(), bottom[1]->data(), has_ignore_label_, ignore_label_};
    loss::SumLoss(ctx_, bottom[0]->count(), work_->data(), term, normalization_ == LossParameter::VALID,
                  FixedLossNormalizer(normalization_, outer_, inner_), top[0]->data());
  }

  void Backward_any(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override {
    // Targets have no gradient; a request for one (propagate_down[1]) is ignored.
    if (!propagate_down[0]) return;
    Map(ctx_, bottom[0]->count(),
        loss::SigmoidCrossEntropyBackward{has_ignore_label_, ignore_label_, top[0]->diff(), work_->data()},
        bottom[0]->diff(), bottom[0]->data(), bottom[1]->data());
  }

 private:
  Blob* work_ = nullptr;  // loss_math.hpp's work blob: the sums' scratch and the normalizer
  bool has_ignore_label_ = false;
  int ignore_label_ = 0;
  LossParameter::NormalizationMode normalization_ = LossParameter::VALID;
  int64_t outer_ = 0, inner_ = 0;
};

CORTADO_REGISTER_LAYER(SigmoidCrossEntropyLoss, SigmoidCrossEntropyLossLayer);

}  // namespace cortado
