// multinomial_logistic_loss.cpp — MultinomialLogisticLoss: the negative log-likelihood of given class
// probabilities (e.g. a Softmax's top). Bottoms: probabilities p (N × …, dim = count/N per sample)
// and labels (N class indices in [0, dim)). Top: the scalar loss.
//   loss = −Σ_i log(max(p_i,label_i, 1e-20)) / N
//   dp_ij = −dloss / (N · max(p_ij, 1e-20)) for j = label_i, 0 elsewhere; labels get none.
// A label outside [0, dim) is an error. No parameters.
// GPU: kernels/loss.hpp (cuda/losses.cu), which write the loss on the device; the forward pass waits
// only to check the labels, as SoftmaxWithLoss's does.
#include <algorithm>
#include <climits>
#include <cmath>

#include "cortado/error.hpp"
#include "cortado/gpu.hpp"
#include "cortado/kernels/loss.hpp"
#include "cortado/layer_registry.hpp"

namespace cortado {

class MultinomialLogisticLossLayer : public LossLayer {
 public:
  using LossLayer::LossLayer;
  const char* type() const override { return "MultinomialLogisticLoss"; }
  bool HasGpuImplementation() const override { return BuiltWithCuda(); }
  LabelRule label_rule() const override { return {1, dim_, false, 0}; }
  [[noreturn]] void FailBadLabelAt(float label, int64_t position) const override { FailBadLabel(Describe(), label, position, dim_); }
  bool IsCapturable() const override { return labels_checked_upstream(); }

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override {
    LossLayer::LayerSetUp(bottom, top);
    if (ctx_.device() == Device::kGPU) work_ = AddScratch();
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
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const float* p = bottom[0]->data();
    const float* label = bottom[1]->data();
    double loss = 0;
    for (int64_t i = 0; i < num_; ++i) {
      const int l = LabelOf(label[i]);
      if (l < 0 || l >= dim_) FailBadLabel(Describe(), label[i], i, dim_);
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
    if (at >= 0) FailBadLabel(Describe(), bad_label, at, dim_);
  }

  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    MultinomialLogisticLossBackwardGpu(ctx_, num_, dim_, bottom[0]->data(), bottom[1]->data(), top[0]->diff(),
                                       bottom[0]->diff());
  }

 private:
  // static_cast<int>(v) as x86 does it: NaN and values outside int's range give INT_MIN.
  static int LabelOf(float v) { return v >= -2147483648.0f && v < 2147483648.0f ? static_cast<int>(v) : INT_MIN; }

  Blob* work_ = nullptr;  // GPU nets: the kernels' partial sums and bad-label flag
  int64_t num_ = 0, dim_ = 0;
};

CORTADO_REGISTER_LAYER(MultinomialLogisticLoss, MultinomialLogisticLossLayer);

}  // namespace cortado
