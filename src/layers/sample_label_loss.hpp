// sample_label_loss.hpp — the base of the losses with one class label per sample (HingeLoss,
// MultinomialLogisticLoss): bottom 0 holds N samples of dim = count / N values, bottom 1 N labels in
// [0, dim) (the loss layers' bad-label error otherwise; on a GPU, checked by the data layer when it
// feeds them); the layers keep loss_math.hpp's work blob (the sums' scratch, the normalizer and the
// bad-label flag), on either device (their arithmetic is losses_math.hpp's).
#pragma once

#include <vector>

#include "cortado/error.hpp"
#include "cortado/layer.hpp"
#include "loss_math.hpp"

namespace cortado {

class SampleLabelLoss : public EitherDevice<LossLayer> {
 public:
  using EitherDevice::EitherDevice;
  LabelRule label_rule() const override { return {1, dim_, false, 0}; }
  bool IsCapturable() const override { return labels_checked_upstream(); }
  bool BackwardReadsTopData(int) const override { return false; }  // dloss only

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override {
    LossLayer::LayerSetUp(bottom, top);
    work_ = AddStepScratch();
  }

  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    LossLayer::Reshape(bottom, top);
    num_ = bottom[0]->shape(0);
    dim_ = num_ > 0 ? bottom[0]->count() / num_ : 0;
    CORTADO_REQUIRE(bottom[1]->count() == num_, Describe(), ": needs one label per sample: ", num_,
                    " samples, but the label blob is ", bottom[1]->shape_string());
    work_->Reshape(std::vector<int>{static_cast<int>(loss::kWorkFloats)});
  }

 protected:
  Blob* work_ = nullptr;  // loss_math.hpp's work blob
  int64_t num_ = 0, dim_ = 0;
};

}  // namespace cortado
