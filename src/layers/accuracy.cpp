// accuracy.cpp — Accuracy: the fraction of positions whose label is among the top_k scores.
// Bottoms: scores (outer × C × inner, C = shape(accuracy_param.axis)) and labels (outer·inner
// values in [0, C)); positions labelled ignore_label are skipped. Tops: the scalar accuracy and,
// optionally, per-class accuracy (C), 0 for a class with no samples.
// As in Caffe, a position counts as correct when fewer than top_k other classes score >= the true
// class's score (ties count against the prediction). No gradient: Backward does nothing.
// GPU: kernels/dense.hpp (accuracy.cu); a bad label is flagged there and reported as on the CPU.
#include <algorithm>

#include "cortado/error.hpp"
#include "cortado/kernels/dense.hpp"
#include "cortado/layer_registry.hpp"

namespace cortado {

class AccuracyLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Accuracy"; }
  int ExactNumBottomBlobs() const override { return 2; }
  int MinTopBlobs() const override { return 1; }
  int MaxTopBlobs() const override { return 2; }
  bool AllowForceBackward(int) const override { return false; }
  LabelRule label_rule() const override { return {1, channels_, has_ignore_label_, ignore_label_}; }
  bool IsCapturable() const override { return labels_checked_upstream(); }
  bool BackwardReadsBottomData(int) const override { return false; }  // no backward pass
  bool BackwardReadsTopData(int) const override { return false; }

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override {
    const AccuracyParameter& ap = param_.accuracy_param();
    top_k_ = static_cast<int>(ap.top_k());
    has_ignore_label_ = ap.has_ignore_label();
    ignore_label_ = ap.ignore_label();
    CORTADO_REQUIRE(top_k_ >= 1, Describe(), ": accuracy_param.top_k must be at least 1");
    if (top.size() > 1) class_count_ = AddStepScratch();
    if (ctx_.device() == Device::kGPU) work_ = AddStepScratch();
  }

  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    const int axis = param_.accuracy_param().axis();
    const int n = bottom[0]->num_axes();
    CORTADO_REQUIRE(axis >= -n && axis < n, Describe(), ": accuracy_param.axis ", axis,
                    " is out of range for a bottom of shape ", bottom[0]->shape_string());
    const int a = bottom[0]->CanonicalAxisIndex(axis);
    channels_ = bottom[0]->shape(a);
    outer_ = bottom[0]->count(0, a);
    inner_ = bottom[0]->count(a + 1);
    CORTADO_REQUIRE(top_k_ <= channels_, Describe(), ": top_k ", top_k_,
                    " is larger than the number of classes ", channels_);
    CORTADO_REQUIRE(outer_ * inner_ == bottom[1]->count(), Describe(), ": needs one label per ",
                    "prediction: scores ", bottom[0]->shape_string(), " (class axis ", a, ") want ",
                    outer_ * inner_, " labels, but the label blob is ", bottom[1]->shape_string());
    top[0]->Reshape(std::vector<int>{});
    if (top.size() > 1) {
      top[1]->Reshape(std::vector<int>{static_cast<int>(channels_)});
      class_count_->Reshape(std::vector<int>{static_cast<int>(channels_)});
    }
    if (work_) work_->Reshape(std::vector<int>{static_cast<int>(AccuracyWorkFloats(channels_))});
  }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const float* x = bottom[0]->data();
    const float* label = bottom[1]->data();
    const bool per_class = top.size() > 1;
    float* class_correct = per_class ? top[1]->data() : nullptr;
    float* class_total = per_class ? class_count_->data() : nullptr;
    if (per_class) {
      std::fill(class_correct, class_correct + channels_, 0.0f);
      std::fill(class_total, class_total + channels_, 0.0f);
    }
    const int64_t dim = channels_ * inner_;
    int64_t correct = 0, count = 0;
    for (int64_t i = 0; i < outer_; ++i) {
      for (int64_t j = 0; j < inner_; ++j) {
        const int l = LabelOf(label[i * inner_ + j]);
        if (has_ignore_label_ && l == ignore_label_) continue;
        if (l < 0 || l >= channels_) FailBadLabelAt(label[i * inner_ + j], i * inner_ + j);
        const float* xij = x + i * dim + j;
        const float truth = xij[l * inner_];
        int at_least = -1;  // classes scoring >= the true one, the true class itself excluded
        for (int64_t c = 0; c < channels_ && at_least < top_k_; ++c)
          at_least += xij[c * inner_] >= truth;
        const bool hit = at_least < top_k_;
        correct += hit;
        ++count;
        if (per_class) {
          class_total[l] += 1;
          class_correct[l] += hit;
        }
      }
    }
    top[0]->data()[0] = count == 0 ? 0.0f : static_cast<float>(correct) / count;
    if (per_class) {
      for (int64_t c = 0; c < channels_; ++c)
        class_correct[c] = class_total[c] == 0 ? 0.0f : class_correct[c] / class_total[c];
    }
  }

  void Backward_cpu(const BlobVec&, const std::vector<bool>&, const BlobVec&) override {}

  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    float bad_label = 0;
    const int64_t at = AccuracyForwardGpu(ctx_, outer_, channels_, inner_, top_k_, has_ignore_label_, ignore_label_,
                                          bottom[0]->data(), bottom[1]->data(), work_->data(), top[0]->data(),
                                          top.size() > 1 ? top[1]->data() : nullptr, BadLabelOut(&bad_label));
    if (at >= 0) FailBadLabelAt(bad_label, at);
  }

  void Backward_gpu(const BlobVec&, const std::vector<bool>&, const BlobVec&) override {}

 private:
  Blob* class_count_ = nullptr;
  Blob* work_ = nullptr;  // GPU nets: the kernels' counters and bad-label flag
  int top_k_ = 1;
  bool has_ignore_label_ = false;
  int ignore_label_ = 0;
  int64_t channels_ = 0, outer_ = 0, inner_ = 0;
};

CORTADO_REGISTER_LAYER(Accuracy, AccuracyLayer);

}  // namespace cortado
