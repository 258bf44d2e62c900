// softmax_loss_base.hpp — what the losses over a softmax (SoftmaxWithLoss, InfogainLoss) share: an
// inner Softmax along an axis whose probabilities go to the second top (when there is one) or to a
// scratch buffer; the label parameters (loss_param.ignore_label, normalization); the shape
// outer × C × inner with one label per position; the normalizer; and the bad-label message and rule
// (labels in [0, C) or ignore_label; GPU nets may have them checked by the data layer, Layer::label_rule);
// and the loss work blob (loss_math.hpp: the sums, the normalizer kept for the backward pass, the
// bad-label flag), on either device. The arithmetic is softmax_math.hpp's.
#pragma once

#include <memory>
#include <vector>

#include "cortado/layer.hpp"

namespace cortado {

class SoftmaxLossBase : public LossLayer {
 public:
  using LossLayer::LossLayer;
  int ExactNumTopBlobs() const override { return -1; }
  int MinTopBlobs() const override { return 1; }
  int MaxTopBlobs() const override { return 2; }
  LabelRule label_rule() const override { return {1, channels_, has_ignore_label_, ignore_label_}; }
  bool IsCapturable() const override { return labels_checked_upstream(); }
  // Backward reads p (the probabilities top, or a scratch buffer), the labels and H, never the scores.
  bool BackwardReadsBottomData(int i) const override { return i != 0; }
  bool BackwardReadsTopData(int i) const override { return i == 1; }
  std::vector<Scratch> scratch_buffers() const override;  // the inner softmax's too

 protected:
  // LayerSetUp's shared part: the label parameters, the probabilities, the inner Softmax along axis.
  void SetUpSoftmax(const BlobVec& bottom, const BlobVec& top, int axis);
  // Reshape's shared part: the inner Softmax, then C, outer and inner along axis, and one label per
  // position (axis_name says which parameter set the axis, for the message).
  void ReshapeSoftmax(const BlobVec& bottom, const BlobVec& top, int axis, const char* axis_name);
  void ForwardSoftmax(const BlobVec& bottom);
  // The normalizer of every mode but VALID (whose count is known only after the forward pass).
  double FixedNormalizer() const { return FixedLossNormalizer(normalization_, outer_, inner_); }
  // After a forward pass's terms flagged labels in work_: the one-line error for the first bad one
  // (on the GPU this waits for the device, unless the labels were checked upstream).
  void FailOnFlaggedLabel(const BlobVec& bottom);

  std::unique_ptr<Layer> softmax_;
  BlobVec softmax_bottom_, softmax_top_;
  Blob* prob_ = nullptr;
  Blob* work_ = nullptr;  // loss::kWorkFloats: Total's sums, the normalizer, the bad-label flag
  bool has_ignore_label_ = false;
  int ignore_label_ = 0;
  LossParameter::NormalizationMode normalization_ = LossParameter::VALID;
  int64_t channels_ = 0, outer_ = 0, inner_ = 0;
};

}  // namespace cortado
