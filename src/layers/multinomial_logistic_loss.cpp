// multinomial_logistic_loss.cpp — MultinomialLogisticLoss: the negative log-likelihood of given class
// probabilities (e.g. a Softmax's top). Bottoms: probabilities p (N × …, dim = count/N per sample)
// and labels (N class indices in [0, dim)). Top: the scalar loss.
//   loss = −Σ_i log(max(p_i,label_i, 1e-20)) / N
//   dp_ij = −dloss / (N · max(p_ij, 1e-20)) for j = label_i, 0 elsewhere; labels get none.
// A label outside [0, dim) is an error. No parameters.
// The arithmetic is losses_math.hpp's, on either device: the loss top is written where the context
// lives; the forward pass waits only to check the labels, as SoftmaxWithLoss's does.
#include "cortado/layer_registry.hpp"
#include "losses_math.hpp"
#include "sample_label_loss.hpp"

namespace cortado {

class MultinomialLogisticLossLayer : public SampleLabelLoss {
 public:
  using SampleLabelLoss::SampleLabelLoss;
  const char* type() const override { return "MultinomialLogisticLoss"; }

 protected:
  void Forward_any(const BlobVec& bottom, const BlobVec& top) override {
    float* work = work_->data();
    const float* label = bottom[1]->data();
    ForEach(ctx_, 1, loss::ClearFlag{loss::FlagOf(work)});
    loss::SumLoss(ctx_, num_, work, loss::MultinomialLogisticTerm{bottom[0]->data(), label, loss::FlagOf(work), dim_},
                  false, static_cast<double>(num_), top[0]->data());
    float bad_label = 0;
    const int64_t at = loss::FirstFlagged(ctx_, work, label, BadLabelOut(&bad_label));
    if (at >= 0) FailBadLabelAt(bad_label, at);
  }

  void Backward_any(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override {
    // Labels have no gradient; a request for one (propagate_down[1]) is ignored.
    if (!propagate_down[0]) return;
    ForEach(ctx_, num_ * dim_,
            loss::MultinomialLogisticBackward{bottom[0]->data(), bottom[1]->data(), top[0]->diff(), work_->data(),
                                              bottom[0]->diff(), dim_});
  }
};

CORTADO_REGISTER_LAYER(MultinomialLogisticLoss, MultinomialLogisticLossLayer);

}  // namespace cortado
