// hinge_loss.cpp — HingeLoss: the one-vs-all hinge loss of N samples' scores against their classes.
// Bottoms: scores x (N × …, dim = count/N values per sample) and labels (N class indices in
// [0, dim)). Top: the scalar loss. With v_ij = −x_ij for j = label_i and x_ij otherwise (the label's
// sign flip) and m_ij = max(0, 1 + v_ij):
//   L1 (default): loss = Σ m_ij / N;    dx_ij = ±[m_ij > 0] · dloss / N
//   L2:           loss = Σ m_ij² / N;   dx_ij = ±2·m_ij · dloss / N
// where ± is − at the label and + elsewhere. hinge_loss_param: norm (L1 | L2). A label outside
// [0, dim) is an error; labels get no gradient.
// GPU: kernels/loss.hpp (cuda/losses.cu), which write the loss on the device; the forward pass waits
// only to check the labels, as SoftmaxWithLoss's does.
#include <algorithm>

#include "cortado/layer_registry.hpp"
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
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const float* x = bottom[0]->data();
    const float* label = bottom[1]->data();
    double loss = 0;
    for (int64_t i = 0; i < num_; ++i) {
      const int l = LabelOf(label[i]);
      if (l < 0 || l >= dim_) FailBadLabelAt(label[i], i);
      for (int64_t j = 0; j < dim_; ++j) {
        const float m = std::max(0.0f, 1.0f + (j == l ? -x[i * dim_ + j] : x[i * dim_ + j]));
        loss += l2_ ? m * m : m;
      }
    }
    top[0]->data()[0] = static_cast<float>(loss / std::max<int64_t>(num_, 1));
  }

  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    // Labels have no gradient; a request for one (propagate_down[1]) is ignored.
    if (!propagate_down[0]) return;
    const float* x = bottom[0]->data();
    const float* label = bottom[1]->data();
    float* dx = bottom[0]->diff();
    const float scale = top[0]->diff()[0] / static_cast<float>(num_);
    for (int64_t i = 0; i < num_; ++i) {
      const int l = LabelOf(label[i]);
      for (int64_t j = 0; j < dim_; ++j) {
        const float m = std::max(0.0f, 1.0f + (j == l ? -x[i * dim_ + j] : x[i * dim_ + j]));
        const float g = l2_ ? 2.0f * m : (m > 0.0f ? 1.0f : 0.0f);
        dx[i * dim_ + j] = (j == l ? -scale : scale) * g;
      }
    }
  }

  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    float bad_label = 0;
    const int64_t at = HingeLossForwardGpu(ctx_, num_, dim_, bottom[0]->data(), bottom[1]->data(), l2_,
                                           work_->data(), top[0]->data(), BadLabelOut(&bad_label));
    if (at >= 0) FailBadLabelAt(bad_label, at);
  }

  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    HingeLossBackwardGpu(ctx_, num_, dim_, bottom[0]->data(), bottom[1]->data(), l2_, top[0]->diff(),
                         bottom[0]->diff());
  }

 private:
  bool l2_ = false;
};

CORTADO_REGISTER_LAYER(HingeLoss, HingeLossLayer);

}  // namespace cortado
