// infogain_loss.cpp — InfogainLoss: a softmax, then the loss weighted by an infogain matrix H
// (Caffe ≥ 1.0's InfogainLossLayer). Bottoms: scores (outer × K × inner, K = shape(infogain_param.axis),
// axis default 1), labels (outer·inner values in [0, K), or loss_param.ignore_label) and, optionally, H
// as a third bottom; without it H is read from infogain_param.source (a binaryproto of K·K values).
// Tops: the scalar loss and, optionally, the probabilities p = softmax(scores) along the axis.
//   loss = −Σ_positions Σ_c H[l, c] · log(max(p_c, 1e-20)) / normalizer   (l: the position's label)
//   dscores_c = (p_c · Σ_c' H[l, c'] − H[l, c]) · dloss / normalizer;  0 at ignored positions.
// normalizer (loss_param.normalization): VALID = positions not ignored (default), FULL = outer·inner,
// BATCH_SIZE = outer, NONE = 1; at least 1 (the loss layers' shared LossNormalizer). Caffe refuses the
// deprecated loss_param.normalize here, and so does this layer. A label outside [0, K) is the loss
// layers' one-line error. Labels and H get no gradient (a request for one is ignored, as the other loss
// layers here do).
// GPU: the inner Softmax's kernels, then kernels/zoo.hpp (cuda/infogain_loss.cu), which keep the
// normalizer on the device and flag a bad label for the host to report as the CPU does. H from a file
// is copied to the device once, at the first forward pass.
#include <algorithm>
#include <climits>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "cortado/error.hpp"
#include "cortado/gpu.hpp"
#include "cortado/io.hpp"
#include "cortado/kernels/zoo.hpp"
#include "cortado/layer_registry.hpp"

namespace cortado {

class InfogainLossLayer : public LossLayer {
 public:
  using LossLayer::LossLayer;
  const char* type() const override { return "InfogainLoss"; }
  int ExactNumBottomBlobs() const override { return -1; }
  int MinBottomBlobs() const override { return 2; }
  int MaxBottomBlobs() const override { return 3; }
  int ExactNumTopBlobs() const override { return -1; }
  int MinTopBlobs() const override { return 1; }
  int MaxTopBlobs() const override { return 2; }
  bool AllowForceBackward(int bottom_index) const override { return bottom_index == 0; }
  bool HasGpuImplementation() const override { return BuiltWithCuda(); }
  LabelRule label_rule() const override { return {1, channels_, has_ignore_label_, ignore_label_}; }
  [[noreturn]] void FailBadLabelAt(float label, int64_t position) const override { FailBadLabel(label, position); }
  bool IsCapturable() const override { return labels_checked_upstream(); }

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override {
    LossLayer::LayerSetUp(bottom, top);
    const LossParameter& lp = param_.loss_param();
    CORTADO_REQUIRE(!lp.has_normalize(), Describe(), ": loss_param.normalize is deprecated; use normalization");
    has_ignore_label_ = lp.has_ignore_label();
    ignore_label_ = lp.ignore_label();
    normalization_ = lp.normalization();
    if (bottom.size() < 3) ReadInfogainMatrix();
    prob_ = top.size() > 1 ? top[1] : AddScratch();
    if (ctx_.device() == Device::kGPU) {
      work_ = AddScratch();
      row_sums_dev_ = AddScratch();
      if (bottom.size() < 3) h_dev_ = AddScratch();
    }
    LayerParameter inner;
    inner.set_name(name() + "/softmax");
    inner.set_type("Softmax");
    inner.set_phase(param_.phase());
    inner.mutable_softmax_param()->set_axis(param_.infogain_loss_param().axis());
    softmax_ = LayerRegistry::Create(inner, ctx_);
    softmax_bottom_ = {bottom[0]};
    softmax_top_ = {prob_};
    softmax_->SetUp(softmax_bottom_, softmax_top_);
  }

  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    LossLayer::Reshape(bottom, top);
    softmax_bottom_[0] = bottom[0];
    softmax_->Reshape(softmax_bottom_, softmax_top_);
    const int axis = bottom[0]->CanonicalAxisIndex(param_.infogain_loss_param().axis());
    channels_ = bottom[0]->shape(axis);
    outer_ = bottom[0]->count(0, axis);
    inner_ = bottom[0]->count(axis + 1);
    CORTADO_REQUIRE(outer_ * inner_ == bottom[1]->count(), Describe(), ": needs one label per score position: ",
                    "scores ", bottom[0]->shape_string(), " (infogain axis ", axis, ") want ", outer_ * inner_,
                    " labels, but the label blob is ", bottom[1]->shape_string());
    const int64_t h_count = bottom.size() > 2 ? bottom[2]->count() : static_cast<int64_t>(h_.size());
    CORTADO_REQUIRE(h_count == channels_ * channels_, Describe(), ": the infogain matrix H must be ", channels_,
                    "×", channels_, " (", channels_ * channels_, " values) for ", channels_, " classes, but ",
                    bottom.size() > 2 ? "bottom 2 is " + bottom[2]->shape_string()
                                      : "'" + param_.infogain_loss_param().source() + "' holds " +
                                            std::to_string(h_count) + " values");
    row_sums_.assign(static_cast<size_t>(channels_), 0.0f);
    if (bottom.size() < 3) RowSums(h_.data(), row_sums_.data());  // H will not change: once
    if (work_) work_->Reshape(std::vector<int>{static_cast<int>(kInfogainWorkFloats)});
    if (row_sums_dev_) row_sums_dev_->Reshape(std::vector<int>{static_cast<int>(channels_)});
    if (h_dev_) h_dev_->Reshape(std::vector<int>{static_cast<int>(h_count)});
  }

  std::vector<Scratch> scratch_buffers() const override {
    std::vector<Scratch> out = Layer::scratch_buffers();
    for (const Scratch& s : softmax_->scratch_buffers()) out.push_back(s);
    return out;
  }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    softmax_bottom_[0] = bottom[0];
    softmax_->Forward(softmax_bottom_, softmax_top_);
    const float* p = prob_->data();
    const float* label = bottom[1]->data();
    const float* h = H(bottom);
    double loss = 0;
    int64_t valid = 0;
    for (int64_t i = 0; i < outer_; ++i) {
      for (int64_t j = 0; j < inner_; ++j) {
        const int64_t at = i * inner_ + j;
        const int l = LabelOf(label[at]);
        if (has_ignore_label_ && l == ignore_label_) continue;
        if (l < 0 || l >= channels_) FailBadLabel(label[at], at);
        for (int64_t c = 0; c < channels_; ++c)
          loss -= static_cast<double>(h[l * channels_ + c]) *
                  std::log(std::max(p[(i * channels_ + c) * inner_ + j], kInfogainLogThreshold));
        ++valid;
      }
    }
    valid_count_ = valid;
    top[0]->data()[0] = static_cast<float>(loss / Normalizer());
  }

  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const float* p = prob_->data();
    const float* label = bottom[1]->data();
    const float* h = H(bottom);
    if (bottom.size() > 2) RowSums(h, row_sums_.data());  // H is a bottom and may change: every time
    float* dx = bottom[0]->diff();
    const float scale = top[0]->diff()[0] / static_cast<float>(Normalizer());
    for (int64_t i = 0; i < outer_; ++i) {
      for (int64_t j = 0; j < inner_; ++j) {
        const int l = LabelOf(label[i * inner_ + j]);
        const bool ignored = has_ignore_label_ && l == ignore_label_;
        for (int64_t c = 0; c < channels_; ++c) {
          const int64_t k = (i * channels_ + c) * inner_ + j;
          dx[k] = ignored ? 0.0f : scale * (p[k] * row_sums_[l] - h[l * channels_ + c]);
        }
      }
    }
  }

  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    if (h_dev_ && !h_uploaded_) {  // H from a file: to the device once
      h_dev_->WriteData(h_);
      row_sums_dev_->WriteData(row_sums_);
      h_uploaded_ = true;
    }
    softmax_bottom_[0] = bottom[0];
    softmax_->Forward(softmax_bottom_, softmax_top_);
    float bad_label = 0;
    const int64_t at = InfogainLossForwardGpu(ctx_, outer_, channels_, inner_, prob_->data(), bottom[1]->data(),
                                              HDev(bottom), has_ignore_label_, ignore_label_,
                                              normalization_ == LossParameter::VALID, FixedNormalizer(),
                                              work_->data(), top[0]->data(), BadLabelOut(&bad_label));
    if (at >= 0) FailBadLabel(bad_label, at);
  }

  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    if (bottom.size() > 2) InfogainRowSumsGpu(ctx_, channels_, bottom[2]->data(), row_sums_dev_->data());
    InfogainLossBackwardGpu(ctx_, outer_, channels_, inner_, prob_->data(), bottom[1]->data(), HDev(bottom),
                            row_sums_dev_->data(), has_ignore_label_, ignore_label_, top[0]->diff(), work_->data(),
                            bottom[0]->diff());
  }

 private:
  void ReadInfogainMatrix() {
    const InfogainLossParameter& p = param_.infogain_loss_param();
    CORTADO_REQUIRE(p.has_source(), Describe(), ": needs the infogain matrix H: give infogain_param.source ",
                    "(a binaryproto) or a third bottom");
    BlobProto proto;
    try {
      ReadProtoFromBinaryFile(p.source(), &proto);
    } catch (const Error& e) {
      Fail(Describe(), ": infogain matrix: ", e.what());
    }
    int64_t count = 1;
    for (int d : BlobProtoShape(proto)) count *= d;
    if (proto.data_size() == count) {
      h_.assign(proto.data().begin(), proto.data().end());
    } else if (proto.double_data_size() == count) {
      h_.assign(proto.double_data().begin(), proto.double_data().end());
    } else {
      Fail(Describe(), ": infogain matrix '", p.source(), "' has shape with ", count, " values but holds ",
           proto.data_size() + proto.double_data_size());
    }
  }

  // Σ_c H[r, c] per row r, in float in increasing c (Caffe's sum_rows_of_H).
  void RowSums(const float* h, float* sums) const {
    for (int64_t r = 0; r < channels_; ++r) {
      float sum = 0;
      for (int64_t c = 0; c < channels_; ++c) sum += h[r * channels_ + c];
      sums[r] = sum;
    }
  }

  const float* H(const BlobVec& bottom) const { return bottom.size() > 2 ? bottom[2]->data() : h_.data(); }
  const float* HDev(const BlobVec& bottom) const { return bottom.size() > 2 ? bottom[2]->data() : h_dev_->data(); }

  // static_cast<int>(v) as x86 does it: NaN and values outside int's range give INT_MIN.
  static int LabelOf(float v) { return v >= -2147483648.0f && v < 2147483648.0f ? static_cast<int>(v) : INT_MIN; }

  [[noreturn]] void FailBadLabel(float label, int64_t position) const {
    cortado::FailBadLabel(Describe(), label, position, channels_,
                          has_ignore_label_ ? " or ignore_label " + std::to_string(ignore_label_) : "");
  }

  double Normalizer() const { return LossNormalizer(normalization_, outer_, inner_, valid_count_); }
  double FixedNormalizer() const { return FixedLossNormalizer(normalization_, outer_, inner_); }

  std::unique_ptr<Layer> softmax_;
  BlobVec softmax_bottom_, softmax_top_;
  Blob* prob_ = nullptr;
  std::vector<float> h_;         // H from infogain_param.source (host)
  std::vector<float> row_sums_;  // CPU nets: H's row sums
  Blob* h_dev_ = nullptr;        // GPU nets with H from a file: H on the device
  Blob* row_sums_dev_ = nullptr; // GPU nets: H's row sums on the device
  Blob* work_ = nullptr;         // GPU nets: the kernels' partial sums, normalizer and bad-label flag
  bool h_uploaded_ = false;
  bool has_ignore_label_ = false;
  int ignore_label_ = 0;
  LossParameter::NormalizationMode normalization_ = LossParameter::VALID;
  int64_t channels_ = 0, outer_ = 0, inner_ = 0, valid_count_ = 0;
};

CORTADO_REGISTER_LAYER(InfogainLoss, InfogainLossLayer);

}  // namespace cortado
