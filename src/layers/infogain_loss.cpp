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
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "cortado/error.hpp"
#include "cortado/io.hpp"
#include "cortado/kernels/zoo.hpp"
#include "cortado/layer_registry.hpp"
#include "softmax_loss_base.hpp"

namespace cortado {

class InfogainLossLayer : public SoftmaxLossBase {
 public:
  using SoftmaxLossBase::SoftmaxLossBase;
  const char* type() const override { return "InfogainLoss"; }
  int ExactNumBottomBlobs() const override { return -1; }
  int MinBottomBlobs() const override { return 2; }
  int MaxBottomBlobs() const override { return 3; }
  bool AllowForceBackward(int bottom_index) const override { return bottom_index == 0; }

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override {
    LossLayer::LayerSetUp(bottom, top);
    const LossParameter& lp = param_.loss_param();
    CORTADO_REQUIRE(!lp.has_normalize(), Describe(), ": loss_param.normalize is deprecated; use normalization");
    if (bottom.size() < 3) ReadInfogainMatrix();
    SetUpSoftmax(bottom, top, param_.infogain_loss_param().axis());
    if (ctx_.device() == Device::kGPU) {
      work_ = AddStepScratch();  // the normalizer from Forward to Backward
      // H from a file and its row sums are uploaded once; H as a bottom is summed in every Backward.
      row_sums_dev_ = bottom.size() < 3 ? AddScratch() : AddStepScratch();
      if (bottom.size() < 3) h_dev_ = AddScratch();
    }
  }

  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    ReshapeSoftmax(bottom, top, param_.infogain_loss_param().axis(), "infogain axis");
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

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    ForwardSoftmax(bottom);
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
        if (l < 0 || l >= channels_) FailBadLabelAt(label[at], at);
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
    ForwardSoftmax(bottom);
    float bad_label = 0;
    const int64_t at = InfogainLossForwardGpu(ctx_, outer_, channels_, inner_, prob_->data(), bottom[1]->data(),
                                              HDev(bottom), has_ignore_label_, ignore_label_,
                                              normalization_ == LossParameter::VALID, FixedNormalizer(),
                                              work_->data(), top[0]->data(), BadLabelOut(&bad_label));
    if (at >= 0) FailBadLabelAt(bad_label, at);
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

  std::vector<float> h_;         // H from infogain_param.source (host)
  std::vector<float> row_sums_;  // CPU nets: H's row sums
  Blob* h_dev_ = nullptr;        // GPU nets with H from a file: H on the device
  Blob* row_sums_dev_ = nullptr; // GPU nets: H's row sums on the device
  Blob* work_ = nullptr;         // GPU nets: the kernels' partial sums, normalizer and bad-label flag
  bool h_uploaded_ = false;
};

CORTADO_REGISTER_LAYER(InfogainLoss, InfogainLossLayer);

}  // namespace cortado
