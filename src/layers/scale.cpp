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
// In place: x is copied to a scratch buffer first, for dγ. Sums run in double.
// GPU: kernels/norm.hpp (cuda/scale.cu); the sums are chunked, their partials in a workspace.
#include "cortado/error.hpp"
#include "cortado/filler.hpp"
#include "cortado/gpu.hpp"
#include "cortado/kernels/norm.hpp"
#include "cortado/layer_registry.hpp"
#include "cortado/math.hpp"
#include "cortado/math_gpu.hpp"
#include "axis_operand.hpp"

namespace cortado {

class ScaleLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Scale"; }
  int MinBottomBlobs() const override { return 1; }
  int MaxBottomBlobs() const override { return 2; }
  int ExactNumTopBlobs() const override { return 1; }
  bool HasGpuImplementation() const override { return BuiltWithCuda(); }
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
    if (top[0] != bottom[0]) top[0]->ReshapeLike(x);
    if (x_copy_) x_copy_->ReshapeLike(x);
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
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    if (x_copy_) cpu_copy(bottom[0]->count(), bottom[0]->data(), x_copy_->data());
    const float* x = bottom[0]->data();
    const float* scale = Scale(bottom)->data();
    const float* bias = bias_index_ >= 0 ? blobs_[bias_index_]->data() : nullptr;
    float* y = top[0]->data();
#pragma omp parallel for collapse(2) schedule(static) if (Parallel())
    for (int64_t o = 0; o < outer_; ++o)
      for (int64_t d = 0; d < dim_; ++d) {
        const int64_t base = (o * dim_ + d) * inner_;
        const float g = scale[d], b = bias ? bias[d] : 0.0f;
#pragma omp simd
        for (int64_t i = base; i < base + inner_; ++i) y[i] = x[i] * g + b;
      }
  }

  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    const float* dy = top[0]->diff();
    // Parameter and bottom[1] gradients first: in place, dx overwrites dy.
    if (bias_index_ >= 0 && param_propagate_down(bias_index_))
      ChannelSum(dy, nullptr, true, blobs_[bias_index_]->diff());
    if (ScaleGradientWanted(propagate_down)) {
      const float* x = x_copy_ ? x_copy_->data() : bottom[0]->data();
      ChannelSum(dy, x, bottom.size() == 1, Scale(bottom)->diff());
    }
    if (!propagate_down[0]) return;
    const float* scale = Scale(bottom)->data();
    float* dx = bottom[0]->diff();
#pragma omp parallel for collapse(2) schedule(static) if (Parallel())
    for (int64_t o = 0; o < outer_; ++o)
      for (int64_t d = 0; d < dim_; ++d) {
        const int64_t base = (o * dim_ + d) * inner_;
#pragma omp simd
        for (int64_t i = base; i < base + inner_; ++i) dx[i] = dy[i] * scale[d];
      }
  }

  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    if (x_copy_) gpu_copy(ctx_, bottom[0]->count(), bottom[0]->data(), x_copy_->data());
    ScaleBiasForwardGpu(ctx_, outer_, dim_, inner_, bottom[0]->data(), Scale(bottom)->data(),
                        bias_index_ >= 0 ? blobs_[bias_index_]->data() : nullptr, top[0]->data());
  }

  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    const float* dy = top[0]->diff();
    if (bias_index_ >= 0 && param_propagate_down(bias_index_))
      ChannelSumGpu(ctx_, outer_, dim_, inner_, dy, nullptr, true, partials_->data(), blobs_[bias_index_]->diff());
    if (ScaleGradientWanted(propagate_down)) {
      const float* x = x_copy_ ? x_copy_->data() : bottom[0]->data();
      ChannelSumGpu(ctx_, outer_, dim_, inner_, dy, x, bottom.size() == 1, partials_->data(), Scale(bottom)->diff());
    }
    if (!propagate_down[0]) return;
    ScaleBiasForwardGpu(ctx_, outer_, dim_, inner_, dy, Scale(bottom)->data(), nullptr, bottom[0]->diff());
  }

 private:
  Blob* Scale(const BlobVec& bottom) const { return bottom.size() > 1 ? bottom[1] : blobs_[0].get(); }
  bool ScaleGradientWanted(const std::vector<bool>& propagate_down) const {
    return propagate_down.size() > 1 ? propagate_down[1] : param_propagate_down(0);
  }

  // out[d] = (accumulate ? out[d] : 0) + Σ_{o, i} a · b (b null: Σ a), in double: each stretch of
  // inner_ values summed in vector lanes, the stretches in order, channels split over the threads.
  void ChannelSum(const float* a, const float* b, bool accumulate, float* out) const {
#pragma omp parallel for schedule(static) if (Parallel())
    for (int64_t d = 0; d < dim_; ++d) {
      double sum = 0;
      for (int64_t o = 0; o < outer_; ++o) {
        const int64_t base = (o * dim_ + d) * inner_;
        double part = 0;
        if (b) {
#pragma omp simd reduction(+ : part)
          for (int64_t i = base; i < base + inner_; ++i) part += static_cast<double>(a[i]) * b[i];
        } else {
#pragma omp simd reduction(+ : part)
          for (int64_t i = base; i < base + inner_; ++i) part += a[i];
        }
        sum += part;
      }
      out[d] = static_cast<float>(accumulate ? out[d] + sum : sum);
    }
  }

  // Work is split over the CPU threads when there is enough of it.
  bool Parallel() const { return outer_ * dim_ * inner_ >= (int64_t{1} << 15); }

  bool scale_blob_ = true;    // γ is blob 0 (one bottom), else bottom[1]
  int bias_index_ = -1;      // β's blob, or −1 without bias_term
  int64_t outer_ = 1, dim_ = 1, inner_ = 1;
  Blob* x_copy_ = nullptr;   // the bottom, kept for dγ when running in place
  Blob* partials_ = nullptr;  // GPU: the channel sums' partials (a workspace)
};

CORTADO_REGISTER_LAYER(Scale, ScaleLayer);

}  // namespace cortado
