// sample_label_loss.hpp — the base of the losses with one class label per sample (HingeLoss,
// MultinomialLogisticLoss): bottom 0 holds N samples of dim = count / N values, bottom 1 N labels in
// [0, dim) (the loss layers' bad-label error otherwise; on a GPU, checked by the data layer when it
// feeds them); GPU nets keep the kernels' work buffer (kernels/loss.hpp).
#pragma once

#include <vector>

#include "cortado/error.hpp"
#include "cortado/kernels/loss.hpp"
#include "cortado/layer.hpp"

namespace cortado {

class SampleLabelLoss : public LossLayer {
 public:
  using LossLayer::LossLayer;
  LabelRule label_rule() const override { return {1, dim_, false, 0}; }
  bool IsCapturable() const override { return labels_checked_upstream(); }
  bool BackwardReadsTopData(int) const override { return false; }  // dloss only

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override {
    LossLayer::LayerSetUp(bottom, top);
    if (ctx_.device() == Device::kGPU) work_ = AddStepScratch();
  }

  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    LossLayer::Reshape(bottom, top);
    num_ = bottom[0]->shape(0);
    dim_ = num_ > 0 ? bottom[0]->count() / num_ : 0;
    CORTADO_REQUIRE(bottom[1]->count() == num_, Describe(), ": needs one label per sample: ", num_,
                    " samples, but the label blob is ", bottom[1]->shape_string());
    if (work_) work_->Reshape(std::vector<int>{static_cast<int>(kLossWorkFloats)});
  }

 protected:
  Blob* work_ = nullptr;  // GPU nets: the kernels' partial sums and bad-label flag
  int64_t num_ = 0, dim_ = 0;
};

}  // namespace cortado
