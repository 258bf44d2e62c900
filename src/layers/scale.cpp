// scale.cpp — Scale, Caffe's semantics: y = x · γ (+ β), γ broadcast over part of the bottom's axes.
//
// Parameters (scale_param): axis (1), num_axes (1; −1 = every axis from `axis` on, 0 = a scalar),
// filler (default constant 1), bias_term (false), bias_filler (default constant 0).
// With one bottom, γ is a learned blob shaped like bottom axes [axis, axis + num_axes); with two,
// γ is bottom[1], whose shape must equal bottom[0]'s axes from `axis` on (num_axes is then ignored;
// a scalar bottom[1] scales everything). Blobs: γ (one bottom only), then β (bias_term; shaped like γ).
// The bottom is read as (outer, dim, inner) with dim = γ's count:
//   y[o, d, i] = x[o, d, i] · γ[d] (+ β[d])
//   dx = dy · γ[d];  dγ[d] = Σ_{o, i} dy · x  (accumulated for the blob, written into bottom[1]'s diff);
//   dβ[d] += Σ_{o, i} dy.
// In place: x is copied to a scratch buffer first, for dγ. Sums run in double. The arithmetic is
// scale_math.hpp's, on either device (the GPU's sums chunked, their partials in a workspace).
// Storage: with one bottom, x, y, dy and dx are float or 16-bit (bf16 or fp16, one type for all: the
// net's plan gives this layer such blobs without Casts), read as float, each output its float result
// rounded once; γ, β and their gradients stay float. With two bottoms everything is float.
#include "axis_operand.hpp"
#include "cortado/error.hpp"
#include "cortado/filler.hpp"
#include "cortado/kernels/arithmetic.hpp"    // Scaled
#include "cortado/kernels/channel_sums.hpp"  // ChannelSumScratchFloats
#include "cortado/layer_registry.hpp"
#include "scale_math.hpp"

namespace cortado {

class ScaleLayer : public EitherDevice<Layer> {
 public:
  using EitherDevice::EitherDevice;
  const char* type() const override { return "Scale"; }
  int MinBottomBlobs() const override { return 1; }
  int MaxBottomBlobs() const override { return 2; }
  int ExactNumTopBlobs() const override { return 1; }
  // x for dγ (its copy when in place); bottom[1] = γ for dx.
  bool BackwardReadsBottomData(int i) const override { return i != 0 || x_copy_ == nullptr; }
  bool BackwardReadsTopData(int) const override { return false; }
  bool InPlaceSafe() const override { return true; }  // x kept in x_copy_

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override {
    const ScaleParameter& p = param_.scale_param();
    std::vector<int> shape;
    scale_blob_ = bottom.size() == 1;
    if (scale_blob_) {
      shape = LearnedOperandShape(Describe(), *bottom[0], p.axis(), p.num_axes());
      blobs_.push_back(std::make_shared<Blob>(shape));
    } else {
      shape = bottom[1]->shape();
    }
    if (p.bias_term()) {
      bias_index_ = static_cast<int>(blobs_.size());
      blobs_.push_back(std::make_shared<Blob>(shape));
    }
    if (top[0] == bottom[0]) x_copy_ = AddStepScratch();
    if (ctx_.device() == Device::kGPU) partials_ = AddWorkspace();
  }

  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    const Blob& x = *bottom[0];
    const Blob& scale = bottom.size() > 1 ? *bottom[1] : *blobs_[0];
    const OperandSpan span = SpanOfOperand(Describe(), "the scale", x, scale, param_.scale_param().axis());
    outer_ = span.outer, dim_ = span.dim, inner_ = span.inner;
    if (x.channels_last()) {  // NHWC (the Net asks only over axis 1 alone): N·H·W planes of C channels
      CORTADO_REQUIRE(dim_ == x.shape(1) && inner_ == static_cast<int64_t>(x.shape(2)) * x.shape(3), Describe(),
                      ": a channels-last bottom takes a scale over axis 1 alone");
      outer_ *= inner_;
      inner_ = 1;
    }
    if (top[0] != bottom[0]) top[0]->ReshapeLike(x);
    if (x_copy_) {
      x_copy_->ReshapeLike(x);
      x_copy_->set_types(x.data_type(), x.diff_type());  // a copy of x in x's storage
    }
    if (partials_) partials_->Reshape(std::vector<int>{ChannelSumScratchFloats(outer_, dim_, inner_, 1)});
  }

  void InitParams() override {
    const ScaleParameter& p = param_.scale_param();
    if (scale_blob_) {
      FillerParameter filler = p.filler();
      if (!p.has_filler()) filler.set_value(1.0f);  // constant 1
      FillBlob(filler, blobs_[0].get(), ctx_.rng());
    }
    if (bias_index_ >= 0) FillBlob(p.bias_filler(), blobs_[bias_index_].get(), ctx_.rng());
  }

 protected:
  void Forward_any(const BlobVec& bottom, const BlobVec& top) override {
    VisitStorageType(bottom[0]->data_type(), [&](auto zero) {
      using T = decltype(zero);
      const T* x = bottom[0]->data_as<T>();
      // In place, x is kept for dγ: a copy (1 · x, exact in float and back in any storage type).
      if (x_copy_) Map(ctx_, bottom[0]->count(), arithmetic::Scaled{1.0f}, x_copy_->data_as<T>(), x);
      const float* bias = bias_index_ >= 0 ? blobs_[bias_index_]->data() : nullptr;
      MapChannels(ctx_, Layout(), scale::ScaleBias{Scale(bottom)->data(), bias}, top[0]->data_as<T>(), x);
    });
  }

  void Backward_any(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override {
    VisitStorageType(top[0]->diff_type(), [&](auto zero) {
      using T = decltype(zero);
      const T* dy = top[0]->diff_as<T>();
      float* scratch = partials_ ? partials_->data() : nullptr;
      // Parameter and bottom[1] gradients first: in place, dx overwrites dy.
      if (bias_index_ >= 0 && param_propagate_down(bias_index_))
        ChannelSums(ctx_, Layout(), scratch, scale::SumOfProducts{dy, nullptr},
                    scale::StoreSum{true, blobs_[bias_index_]->diff()});
      if (ScaleGradientWanted(propagate_down)) {
        const T* x = (x_copy_ ? x_copy_ : bottom[0])->data_as<T>();
        ChannelSums(ctx_, Layout(), scratch, scale::SumOfProducts{dy, x},
                    scale::StoreSum{bottom.size() == 1, Scale(bottom)->diff()});
      }
      if (!propagate_down[0]) return;
      MapChannels(ctx_, Layout(), scale::ScaleBias{Scale(bottom)->data(), nullptr}, bottom[0]->diff_as<T>(), dy);
    });
  }

 private:
  Blob* Scale(const BlobVec& bottom) const { return bottom.size() > 1 ? bottom[1] : blobs_[0].get(); }
  bool ScaleGradientWanted(const std::vector<bool>& propagate_down) const {
    return propagate_down.size() > 1 ? propagate_down[1] : param_propagate_down(0);
  }

  ChannelLayout Layout() const { return {outer_, dim_, inner_}; }

  bool scale_blob_ = true;    // γ is blob 0 (one bottom), else bottom[1]
  int bias_index_ = -1;      // β's blob, or −1 without bias_term
  int64_t outer_ = 1, dim_ = 1, inner_ = 1;
  Blob* x_copy_ = nullptr;   // the bottom, kept for dγ when running in place
  Blob* partials_ = nullptr;  // GPU: the channel sums' partials (a workspace)
};

CORTADO_REGISTER_LAYER(Scale, ScaleLayer);

}  // namespace cortado
