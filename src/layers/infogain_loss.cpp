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
// The arithmetic is softmax_math.hpp's, on either device: the loss and its count summed by Total
// (loss_math.hpp), the normalizer kept in the work blob for the backward pass, and a bad label flagged
// for the one-line error (the GPU waits for that check unless the labels were checked upstream). H from
// a file and its row sums are made ready once, at the first forward pass (H copied to the device in
// GPU nets); H as a bottom has its row sums taken in every Backward.
#include <memory>
#include <string>
#include <vector>

#include "cortado/error.hpp"
#include "cortado/io.hpp"
#include "cortado/layer_registry.hpp"
#include "softmax_loss_base.hpp"
#include "softmax_math.hpp"

namespace cortado {

class InfogainLossLayer : public EitherDevice<SoftmaxLossBase> {
 public:
  using EitherDevice::EitherDevice;
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
    // H from a file and its row sums are made once; H as a bottom is summed in every Backward.
    row_sums_ = bottom.size() < 3 ? AddScratch() : AddCallScratch();
    if (bottom.size() < 3 && ctx_.device() == Device::kGPU) h_dev_ = AddScratch();
  }

  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    ReshapeSoftmax(bottom, top, param_.infogain_loss_param().axis(), "infogain axis");
    const int64_t h_count = bottom.size() > 2 ? bottom[2]->count() : static_cast<int64_t>(h_.size());
    CORTADO_REQUIRE(h_count == channels_ * channels_, Describe(), ": the infogain matrix H must be ", channels_,
                    "×", channels_, " (", channels_ * channels_, " values) for ", channels_, " classes, but ",
                    bottom.size() > 2 ? "bottom 2 is " + bottom[2]->shape_string()
                                      : "'" + param_.infogain_loss_param().source() + "' holds " +
                                            std::to_string(h_count) + " values");
    row_sums_->Reshape(std::vector<int>{static_cast<int>(channels_)});
    if (h_dev_) h_dev_->Reshape(std::vector<int>{static_cast<int>(h_count)});
  }

 protected:
  void Forward_any(const BlobVec& bottom, const BlobVec& top) override {
    ReadyFileH(bottom);
    ForwardSoftmax(bottom);
    float* work = work_->data();
    ForEach(ctx_, 1, loss::ClearFlag{loss::FlagOf(work)});
    loss::SumLoss(ctx_, outer_ * inner_, work,
                  softmax::InfogainTerm{Labels(bottom), prob_->data(), H(bottom), loss::FlagOf(work)},
                  normalization_ == LossParameter::VALID, FixedNormalizer(), top[0]->data());
    FailOnFlaggedLabel(bottom);
  }

  void Backward_any(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override {
    if (!propagate_down[0] || channels_ == 0) return;
    ReadyFileH(bottom);
    if (bottom.size() > 2) SumRows(H(bottom));  // H is a bottom and may change: every time
    ForEach(ctx_, outer_ * inner_,
            softmax::InfogainGrad{Labels(bottom), prob_->data(), H(bottom), row_sums_->data(), top[0]->diff(),
                                  work_->data(), bottom[0]->diff()},
            channels_);
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

  // H from a file: copied to the device (GPU nets) and summed by rows, once (the scratch memory is
  // bound after Reshape, so at the first pass).
  void ReadyFileH(const BlobVec& bottom) {
    if (bottom.size() > 2 || h_ready_) return;
    if (h_dev_) h_dev_->WriteData(h_);
    SumRows(H(bottom));
    h_ready_ = true;
  }

  // row_sums_[r] = Σ_c H[r, c] (softmax::RowSums), where the context lives.
  void SumRows(const float* h) {
    ForEach(ctx_, channels_, softmax::RowSums{channels_, h, row_sums_->data()}, channels_);
  }

  softmax::Labels Labels(const BlobVec& bottom) const {
    return {channels_, inner_, bottom[1]->data(), has_ignore_label_, ignore_label_};
  }
  // H where the context lives: the third bottom, else H from the file (its device copy in GPU nets).
  const float* H(const BlobVec& bottom) const {
    return bottom.size() > 2 ? bottom[2]->data() : h_dev_ ? h_dev_->data() : h_.data();
  }

  std::vector<float> h_;      // H from infogain_param.source (host)
  Blob* h_dev_ = nullptr;     // GPU nets with H from a file: H on the device
  Blob* row_sums_ = nullptr;  // H's row sums, where the context lives
  bool h_ready_ = false;      // H from a file: copied to the device and summed
};

CORTADO_REGISTER_LAYER(InfogainLoss, InfogainLossLayer);

}  // namespace cortado
