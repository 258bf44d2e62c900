// multinomial_logistic_loss.cpp — MultinomialLogisticLoss: the negative log-likelihood of given class
// probabilities (e.g. a Softmax's top). Bottoms: probabilities p (N × …, dim = count/N per sample)
// and labels (N class indices in [0, dim)). Top: the scalar loss.
//   loss = −Σ_i log(max(p_i,label_i, 1e-20)) / N
//   dp_ij = −dloss / (N · max(p_ij, 1e-20)) for j = label_i, 0 elsewhere; labels get none.
// A label outside [0, dim) is an error. No parameters.
// GPU: kernels/loss.hpp (cuda/losses.cu), which write the loss on the device; the forward pass waits
// only to check the labels, as SoftmaxWithLoss's does.
#include <algorithm>
#include <cmath>

#include "cortado/layer_registry.hpp"
#include "sample_label_loss.hpp"

namespace cortado {

class MultinomialLogisticLossLayer : public SampleLabelLoss {
 public:
  using SampleLabelLoss::SampleLabelLoss;
  const char* type() const override { return "MultinomialLogisticLoss"; }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const float* p = bottom[0]->data();
    const float* label = bottom[1]->data();
    double loss = 0;
    for (int64_t i = 0; i < num_; ++i) {
      const int l = LabelOf(label[i]);
      if (l < 0 || l >= dim_) FailBadLabelAt(label[i], i);
      loss -= std::log(std::max(p[i * dim_ + l], kMultinomialLogThreshold));
    }
    top[0]->data()[0] = static_cast<float>(loss / std::max<int64_t>(num_, 1));
  }

  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    // Labels have no gradient; a request for one (propagate_down[1]) is ignored.
    if (!propagate_down[0]) return;
    const float* p = bottom[0]->data();
    const float* label = bottom[1]->data();
    float* dp = bottom[0]->diff();
    const float scale = -top[0]->diff()[0] / static_cast<float>(num_);
    std::fill(dp, dp + bottom[0]->count(), 0.0f);
    for (int64_t i = 0; i < num_; ++i) {
      const int64_t k = i * dim_ + LabelOf(label[i]);
      dp[k] = scale / std::max(p[k], kMultinomialLogThreshold);
    }
  }

  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    float bad_label = 0;
    const int64_t at = MultinomialLogisticLossForwardGpu(ctx_, num_, dim_, bottom[0]->data(), bottom[1]->data(),
                                                         work_->data(), top[0]->data(), BadLabelOut(&bad_label));
    if (at >= 0) FailBadLabelAt(bad_label, at);
  }

  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    MultinomialLogisticLossBackwardGpu(ctx_, num_, dim_, bottom[0]->data(), bottom[1]->data(), top[0]->diff(),
                                       bottom[0]->diff());
  }
};

CORTADO_REGISTER_LAYER(MultinomialLogisticLoss, MultinomialLogisticLossLayer);

}  // namespace cortado
