// bias.cpp — Bias, Caffe's semantics: y = x + β, β broadcast over part of the bottom's axes.
//
// Parameters (bias_param): axis (1), num_axes (1; −1 = every axis from `axis` on, 0 = a scalar),
// filler (default constant 0).
// With one bottom, β is a learned blob shaped like bottom axes [axis, axis + num_axes); with two, β is
// bottom[1], whose shape must equal bottom[0]'s axes from `axis` on (num_axes is then ignored; a
// scalar bottom[1] is added everywhere). The bottom is read as (outer, dim, inner), dim = β's count:
//   y[o, d, i] = x[o, d, i] + β[d]
//   dx = dy;  dβ[d] = Σ_{o, i} dy  (accumulated for the blob, written into bottom[1]'s diff).
// Runs in place. Sums run in double. The arithmetic is scale_math.hpp's, on either device (the GPU's
// sums chunked, their partials in a workspace).
#include "axis_operand.hpp"
#include "cortado/error.hpp"
#include "cortado/filler.hpp"
#include "cortado/kernels/channel_sums.hpp"  // ChannelSumScratchFloats
#include "cortado/layer_registry.hpp"
#include "cortado/math_gpu.hpp"             // copy_on
#include "scale_math.hpp"

namespace cortado {

class BiasLayer : public EitherDevice<Layer> {
 public:
  using EitherDevice::EitherDevice;
  const char* type() const override { return "Bias"; }
  int MinBottomBlobs() const override { return 1; }
  int MaxBottomBlobs() const override { return 2; }
  int ExactNumTopBlobs() const override { return 1; }
  bool BackwardReadsBottomData(int) const override { return false; }  // dx = dy, dβ = Σ dy
  bool BackwardReadsTopData(int) const override { return false; }
  bool InPlaceSafe() const override { return true; }

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override {
    if (ctx_.device() == Device::kGPU) partials_ = AddWorkspace();
    if (bottom.size() > 1) return;
    const BiasParameter& p = param_.bias_param();
    blobs_.push_back(std::make_shared<Blob>(LearnedOperandShape(Describe(), *bottom[0], p.axis(), p.num_axes())));
  }

  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    const OperandSpan span = SpanOfOperand(Describe(), "the bias", *bottom[0], Bias(bottom), param_.bias_param().axis());
    outer_ = span.outer, dim_ = span.dim, inner_ = span.inner;
    if (top[0] != bottom[0]) top[0]->ReshapeLike(*bottom[0]);
    if (partials_) partials_->Reshape(std::vector<int>{ChannelSumScratchFloats(outer_, dim_, inner_, 1)});
  }

  void InitParams() override {
    if (!blobs_.empty()) FillBlob(param_.bias_param().filler(), blobs_[0].get(), ctx_.rng());
  }

 protected:
  void Forward_any(const BlobVec& bottom, const BlobVec& top) override {
    MapChannels(ctx_, Layout(), scale::ScaleBias{nullptr, Bias(bottom).data()}, top[0]->data(), bottom[0]->data());
  }

  void Backward_any(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override {
    const float* dy = top[0]->diff();
    if (BiasGradientWanted(propagate_down))
      ChannelSums(ctx_, Layout(), partials_ ? partials_->data() : nullptr, scale::SumOfProducts{dy, nullptr},
                  scale::StoreSum{bottom.size() == 1, Bias(bottom).diff()});
    if (propagate_down[0] && bottom[0] != top[0]) copy_on(ctx_, bottom[0]->count(), dy, bottom[0]->diff());
  }

 private:
  Blob& Bias(const BlobVec& bottom) const { return bottom.size() > 1 ? *bottom[1] : *blobs_[0]; }
  bool BiasGradientWanted(const std::vector<bool>& propagate_down) const {
    return propagate_down.size() > 1 ? propagate_down[1] : param_propagate_down(0);
  }

  ChannelLayout Layout() const { return {outer_, dim_, inner_}; }

  int64_t outer_ = 1, dim_ = 1, inner_ = 1;
  Blob* partials_ = nullptr;  // GPU: the channel sums' partials (a workspace)
};

CORTADO_REGISTER_LAYER(Bias, BiasLayer);

}  // namespace cortado
