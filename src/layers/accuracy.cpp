// accuracy.cpp — Accuracy: the fraction of positions whose label is among the top_k scores.
// Bottoms: scores (outer × C × inner, C = shape(accuracy_param.axis)) and labels (outer·inner
// values in [0, C)); positions labelled ignore_label are skipped. Tops: the scalar accuracy and,
// optionally, per-class accuracy (C), 0 for a class with no samples.
// As in Caffe, a position counts as correct when fewer than top_k other classes score >= the true
// class's score (ties count against the prediction). No gradient: Backward does nothing.
// The arithmetic is accuracy_math.hpp's, on either device: the hits and counts summed by Total, the
// per-class rates one class per index, and a bad label flagged in a work blob (loss_math.hpp's layout)
// for the one-line error (the GPU waits for that check unless the labels were checked upstream).
#include "accuracy_math.hpp"
#include "cortado/error.hpp"
#include "cortado/layer_registry.hpp"
#include "loss_math.hpp"

namespace cortado {

class AccuracyLayer : public EitherDevice<Layer> {
 public:
  using EitherDevice::EitherDevice;
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
    work_ = AddCallScratch();
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
    if (top.size() > 1) top[1]->Reshape(std::vector<int>{static_cast<int>(channels_)});
    work_->Reshape(std::vector<int>{static_cast<int>(loss::kWorkFloats)});
  }

 protected:
  void Forward_any(const BlobVec& bottom, const BlobVec& top) override {
    const accuracy::Ranking r{channels_, inner_, top_k_, has_ignore_label_, ignore_label_, bottom[0]->data(),
                              bottom[1]->data()};
    float* work = work_->data();
    ForEach(ctx_, 1, loss::ClearFlag{loss::FlagOf(work)});
    Total(ctx_, outer_ * inner_, work, accuracy::Count{r, loss::FlagOf(work)}, accuracy::StoreAccuracy{top[0]->data()});
    if (top.size() > 1)
      ForEach(ctx_, channels_, accuracy::PerClass{r, outer_ * inner_, top[1]->data()}, outer_ * inner_);
    float bad_label = 0;
    const int64_t at = loss::FirstFlagged(ctx_, work, bottom[1]->data(), BadLabelOut(&bad_label));
    if (at >= 0) FailBadLabelAt(bad_label, at);
  }

  void Backward_any(const BlobVec&, const std::vector<bool>&, const BlobVec&) override {}

 private:
  Blob* work_ = nullptr;  // loss::kWorkFloats: Total's sums and the bad-label flag (loss_math.hpp)
  int top_k_ = 1;
  bool has_ignore_label_ = false;
  int ignore_label_ = 0;
  int64_t channels_ = 0, outer_ = 0, inner_ = 0;
};

CORTADO_REGISTER_LAYER(Accuracy, AccuracyLayer);

}  // namespace cortado
