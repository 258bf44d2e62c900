// hinge_loss.cpp — HingeLoss: the one-vs-all hinge loss of N samples' scores against their classes.
// Bottoms: scores x (N × …, dim = count/N values per sample) and labels (N class indices in
// [0, dim)). Top: the scalar loss. With v_ij = −x_ij for j = label_i and x_ij otherwise (the label's
// sign flip) and m_ij = max(0, 1 + v_ij):
//   L1 (default): loss = Σ m_ij / N;    dx_ij = ±[m_ij > 0] · dloss / N
//   L2:           loss = Σ m_ij² / N;   dx_ij = ±2·m_ij · dloss / N
// where ± is − at the label and + elsewhere. hinge_loss_param: norm (L1 | L2). A label outside
// [0, dim) is an error; labels get no gradient.
// The arithmetic is losses_math.hpp's, on either device: the loss top is written where the context
// lives; the forward pass waits only to check the labels, as SoftmaxWithLoss's does.
#include "cortado/layer_registry.hpp"
#include "losses_math.hpp"
#include "sample_label_loss.hpp"

namespace cortado {

class HingeLossLayer : public SampleLabelLoss {
 public:
  using SampleLabelLoss::SampleLabelLoss;
  const char* type() const override { return "HingeLoss"; }

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override {
    SampleLabelLoss::LayerSetUp(bottom, top);
    l2_ = param_.hinge_loss_param().norm() == HingeLossParameter::L2;
  }

 protected:
  void Forward_any(const BlobVec& bottom, const BlobVec& top) override {
    float* work = work_->data();
    const float* label = bottom[1]->data();
    ForEach(ctx_, 1, loss::ClearFlag{loss::FlagOf(work)});
    loss::SumLoss(ctx_, num_, work, loss::HingeTerm{bottom[0]->data(), label, loss::FlagOf(work), dim_, l2_}, false,
                  static_cast<double>(num_), top[0]->data());
    float bad_label = 0;
    const int64_t at = loss::FirstFlagged(ctx_, work, label, BadLabelOut(&bad_label));
    if (at >= 0) FailBadLabelAt(bad_label, at);
  }

  void Backward_any(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override {
    // Labels have no gradient; a request for one (propagate_down[1]) is ignored.
    if (!propagate_down[0]) return;
    ForEach(ctx_, num_ * dim_,
            loss::HingeBackward{bottom[0]->data(), bottom[1]->data(), top[0]->diff(), work_->data(), bottom[0]->diff(),
                                dim_, l2_});
  }

 private:
  bool l2_ = false;
};

CORTADO_REGISTER_LAYER(HingeLoss, HingeLossLayer);

}  // namespace cortado
