// softmax_loss.cpp — SoftmaxWithLoss: softmax of the scores, then the multinomial logistic loss.
// Bottoms: scores (outer × C × inner, C = shape(softmax_param.axis)) and labels (outer·inner values
// in [0, C), or loss_param.ignore_label). Tops: the scalar loss and, optionally, the probabilities
// (shape of the scores).
//   loss = −Σ log(max(p[label], FLT_MIN)) / normalizer
//   dscores = (p − onehot(label)) · dloss / normalizer; 0 at ignored positions; labels get none.
// normalizer (loss_param.normalization): VALID = positions not ignored (default),
// FULL = outer·inner, BATCH_SIZE = outer, NONE = 1; at least 1. Legacy `normalize: false` (without
// `normalization`) means BATCH_SIZE.
// The arithmetic is softmax_math.hpp's, on either device (with inner 1, a classifier's scores, each
// position's softmax runs inside the loss's pass): the loss and its count summed by Total
// (loss_math.hpp), the normalizer kept in the work blob for the backward pass, and a bad label flagged
// for the one-line error (the GPU waits for that check unless the labels were checked upstream).
#include "cortado/layer_registry.hpp"
#include "softmax_loss_base.hpp"
#include "softmax_math.hpp"

namespace cortado {

class SoftmaxWithLossLayer : public EitherDevice<SoftmaxLossBase> {
 public:
  using EitherDevice::EitherDevice;
  const char* type() const override { return "SoftmaxWithLoss"; }

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override {
    LossLayer::LayerSetUp(bottom, top);
    SetUpSoftmax(bottom, top, param_.softmax_param().axis());
    const LossParameter& lp = param_.loss_param();
    if (!lp.has_normalization() && lp.has_normalize())
      normalization_ = lp.normalize() ? LossParameter::VALID : LossParameter::BATCH_SIZE;
  }

  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    ReshapeSoftmax(bottom, top, param_.softmax_param().axis(), "softmax axis");
  }

 protected:
  void Forward_any(const BlobVec& bottom, const BlobVec& top) override {
    float* work = work_->data();
    ForEach(ctx_, 1, loss::ClearFlag{loss::FlagOf(work)});
    const softmax::LossTerm loss{Labels(bottom), prob_->data(), loss::FlagOf(work)};
    const bool by_count = normalization_ == LossParameter::VALID;
    if (inner_ == 1) {  // the softmax of each position inside the loss's pass
      const softmax::Forward<1> position{channels_, 1, bottom[0]->data(), prob_->data()};
      loss::SumLoss(ctx_, outer_, work, softmax::SoftmaxAndLossTerm{position, loss}, by_count, FixedNormalizer(),
                    top[0]->data());
    } else {
      ForwardSoftmax(bottom);
      loss::SumLoss(ctx_, outer_ * inner_, work, loss, by_count, FixedNormalizer(), top[0]->data());
    }
    FailOnFlaggedLabel(bottom);
  }

  void Backward_any(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override {
    // Labels have no gradient; a request for one (propagate_down[1]) is ignored.
    if (!propagate_down[0] || channels_ == 0) return;
    const softmax::Labels labels = Labels(bottom);
    const float* prob = prob_->data();
    const float* dloss = top[0]->diff();
    const float* work = work_->data();
    float* dx = bottom[0]->diff();
    softmax::RunPositions(ctx_, outer_, channels_, inner_, [&](auto w) {
      return softmax::LossGrad<decltype(w)::value>{labels, prob, dloss, work, dx};
    });
  }

 private:
  softmax::Labels Labels(const BlobVec& bottom) const {
    return {channels_, inner_, bottom[1]->data(), has_ignore_label_, ignore_label_};
  }
};

CORTADO_REGISTER_LAYER(SoftmaxWithLoss, SoftmaxWithLossLayer);

}  // namespace cortado
