// softmax_loss_base.cpp — SoftmaxLossBase (softmax_loss_base.hpp).
#include "softmax_loss_base.hpp"

#include "cortado/error.hpp"
#include "cortado/layer_registry.hpp"
#include "loss_math.hpp"

namespace cortado {

std::vector<Layer::Scratch> SoftmaxLossBase::scratch_buffers() const {
  std::vector<Scratch> out = Layer::scratch_buffers();
  for (const Scratch& s : softmax_->scratch_buffers()) out.push_back(s);
  return out;
}

void SoftmaxLossBase::SetUpSoftmax(const BlobVec& bottom, const BlobVec& top, int axis) {
  const LossParameter& lp = param_.loss_param();
  has_ignore_label_ = lp.has_ignore_label();
  ignore_label_ = lp.ignore_label();
  normalization_ = lp.normalization();
  prob_ = top.size() > 1 ? top[1] : AddStepScratch();
  work_ = AddStepScratch();  // the normalizer from Forward to Backward
  LayerParameter inner;
  inner.set_name(name() + "/softmax");
  inner.set_type("Softmax");
  inner.set_phase(param_.phase());
  inner.mutable_softmax_param()->set_axis(axis);
  softmax_ = LayerRegistry::Create(inner, ctx_);
  softmax_bottom_ = {bottom[0]};
  softmax_top_ = {prob_};
  softmax_->SetUp(softmax_bottom_, softmax_top_);
}

void SoftmaxLossBase::ReshapeSoftmax(const BlobVec& bottom, const BlobVec& top, int axis_param,
                                     const char* axis_name) {
  LossLayer::Reshape(bottom, top);
  softmax_bottom_[0] = bottom[0];
  softmax_->Reshape(softmax_bottom_, softmax_top_);
  work_->Reshape(std::vector<int>{static_cast<int>(loss::kWorkFloats)});
  const int axis = bottom[0]->CanonicalAxisIndex(axis_param);
  channels_ = bottom[0]->shape(axis);
  outer_ = bottom[0]->count(0, axis);
  inner_ = bottom[0]->count(axis + 1);
  CORTADO_REQUIRE(outer_ * inner_ == bottom[1]->count(), Describe(), ": needs one label per score position: ",
                  "scores ", bottom[0]->shape_string(), " (", axis_name, " ", axis, ") want ", outer_ * inner_,
                  " labels, but the label blob is ", bottom[1]->shape_string());
}

void SoftmaxLossBase::ForwardSoftmax(const BlobVec& bottom) {
  softmax_bottom_[0] = bottom[0];
  softmax_->Forward(softmax_bottom_, softmax_top_);
}

void SoftmaxLossBase::FailOnFlaggedLabel(const BlobVec& bottom) {
  float bad_label = 0;
  const int64_t at = loss::FirstFlagged(ctx_, work_->data(), bottom[1]->data(), BadLabelOut(&bad_label));
  if (at >= 0) FailBadLabelAt(bad_label, at);
}

}  // namespace cortado
