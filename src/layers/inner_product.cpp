// inner_product.cpp — InnerProduct (fully connected), Caffe's semantics.
//
// The bottom is read as a matrix x (M, K): M = product of the axes before `axis` (default 1),
// K = product of the axes from `axis` on. With N = num_output:
//   y (M, N) = x · Wᵀ + b,   W (N, K)  — or y = x · W with W stored (K, N) when transpose is set
//   dW += dyᵀ · x  (transpose: xᵀ · dy),  db += Σ_rows dy,  dx = dy · W  (transpose: dy · Wᵀ)
// The top's shape is the bottom's axes before `axis`, then N.
// GPU: the same products with gpu_gemm; the bias goes in (and its gradient out) through a product
// with a vector of M ones: a buffer of the layer's own on GPU nets (no other buffer shares its memory),
// filled at its first use and again only when M grows past what it holds.
// GPU, 16-bit nets: x, y, dy and dx bf16 or fp16 (the Net gives them only on the GPU), the products
// cuBLAS's on 16-bit operands with float sums (gpu_gemm_stored): W read as a 16-bit copy rounded from the
// float master at each forward, dW summed straight into the master's float diff; the bias and its
// gradient per-column kernels over the 16-bit values (scale_math.hpp).
#include <algorithm>

#include "cast_math.hpp"
#include "cortado/error.hpp"
#include "cortado/filler.hpp"
#include "cortado/kernels/channel_sums.hpp"  // ChannelSumScratchFloats
#include "cortado/layer_registry.hpp"
#include "cortado/math.hpp"
#include "cortado/math_gpu.hpp"
#include "scale_math.hpp"

namespace cortado {

class InnerProductLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "InnerProduct"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }
  bool BackwardReadsTopData(int) const override { return false; }  // x for dW, never y

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override {
    const InnerProductParameter& p = param_.inner_product_param();
    num_output_ = static_cast<int>(p.num_output());
    CORTADO_REQUIRE(num_output_ > 0, Describe(), ": num_output must be positive");
    axis_ = bottom[0]->CanonicalAxisIndex(p.axis());
    k_ = static_cast<int>(bottom[0]->count(axis_));
    transpose_ = p.transpose();
    bias_term_ = p.bias_term();
    blobs_.push_back(std::make_shared<Blob>(transpose_ ? std::vector<int>{k_, num_output_}
                                                       : std::vector<int>{num_output_, k_}));
    if (bias_term_) blobs_.push_back(std::make_shared<Blob>(std::vector<int>{num_output_}));
    compute_type_ = bottom[0]->data_type();
    CORTADO_REQUIRE(compute_type_ == DataType::kFloat || ctx_.device() == Device::kGPU, Describe(), ": ",
                    DataTypeName(compute_type_), " bottoms on the CPU (the Net converts them to float there)");
    if (compute_type_ != DataType::kFloat) {
      weights_compute_ = AddStepScratch();
      weights_compute_->set_types(compute_type_, compute_type_);
      if (bias_term_) partials_ = AddWorkspace();
    } else if (ctx_.device() == Device::kGPU && bias_term_) {
      ones_ = AddScratch();  // keeps its ones from pass to pass
    }
  }

  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    const Blob& x = *bottom[0];
    const int axis = x.CanonicalAxisIndex(param_.inner_product_param().axis());
    CORTADO_REQUIRE(axis == axis_ && x.count(axis) == k_, Describe(), ": the bottom ", x.shape_string(),
                    " flattens to ", x.count(axis), " inputs from axis ", axis, ", but the weights expect ",
                    k_);
    m_ = static_cast<int>(x.count(0, axis));
    std::vector<int> shape(x.shape().begin(), x.shape().begin() + axis);
    shape.push_back(num_output_);
    top[0]->Reshape(shape);
    if (ones_) ones_->Reshape(std::vector<int>{m_});
    if (weights_compute_) weights_compute_->ReshapeLike(*blobs_[0]);
    if (partials_) partials_->Reshape(std::vector<int>{ChannelSumScratchFloats(m_, num_output_, 1, 1)});
  }

  void InitParams() override {
    const InnerProductParameter& p = param_.inner_product_param();
    FillBlob(p.weight_filler(), blobs_[0].get(), ctx_.rng());
    if (bias_term_) FillBlob(p.bias_filler(), blobs_[1].get(), ctx_.rng());
  }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    float* y = top[0]->data();
    cpu_gemm(Trans::kNo, transpose_ ? Trans::kNo : Trans::kYes, m_, num_output_, k_, 1.0f,
             bottom[0]->data(), blobs_[0]->data(), 0.0f, y);
    if (!bias_term_) return;
    const float* b = blobs_[1]->data();
    for (int i = 0; i < m_; ++i) {
      float* row = y + static_cast<int64_t>(i) * num_output_;
      for (int j = 0; j < num_output_; ++j) row[j] += b[j];
    }
  }

  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    const float* dy = top[0]->diff();
    const float* x = bottom[0]->data();
    if (param_propagate_down(0)) {
      if (transpose_) {
        cpu_gemm(Trans::kYes, Trans::kNo, k_, num_output_, m_, 1.0f, x, dy, 1.0f, blobs_[0]->diff());
      } else {
        cpu_gemm(Trans::kYes, Trans::kNo, num_output_, k_, m_, 1.0f, dy, x, 1.0f, blobs_[0]->diff());
      }
    }
    if (bias_term_ && param_propagate_down(1)) {
      float* db = blobs_[1]->diff();
      for (int i = 0; i < m_; ++i) {
        const float* row = dy + static_cast<int64_t>(i) * num_output_;
        for (int j = 0; j < num_output_; ++j) db[j] += row[j];
      }
    }
    if (propagate_down[0]) {
      cpu_gemm(Trans::kNo, transpose_ ? Trans::kYes : Trans::kNo, m_, k_, num_output_, 1.0f, dy,
               blobs_[0]->data(), 0.0f, bottom[0]->diff());
    }
  }

  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    if (weights_compute_) {
      ForwardOn16Bit(*bottom[0], top[0]);
      return;
    }
    float* y = top[0]->data();
    gpu_gemm(ctx_, Trans::kNo, transpose_ ? Trans::kNo : Trans::kYes, m_, num_output_, k_, 1.0f,
             bottom[0]->data(), blobs_[0]->data(), 0.0f, y);
    if (!bias_term_) return;
    ReadyOnes();
    gpu_gemm(ctx_, Trans::kNo, Trans::kNo, m_, num_output_, 1, 1.0f, ones_->data(), blobs_[1]->data(), 1.0f, y);
  }

  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (weights_compute_) {
      BackwardOn16Bit(*top[0], propagate_down[0], bottom[0]);
      return;
    }
    const float* dy = top[0]->diff();
    const float* x = bottom[0]->data();
    if (param_propagate_down(0)) {
      if (transpose_) {
        gpu_gemm(ctx_, Trans::kYes, Trans::kNo, k_, num_output_, m_, 1.0f, x, dy, 1.0f, blobs_[0]->diff());
      } else {
        gpu_gemm(ctx_, Trans::kYes, Trans::kNo, num_output_, k_, m_, 1.0f, dy, x, 1.0f, blobs_[0]->diff());
      }
    }
    if (bias_term_ && param_propagate_down(1)) {  // db += dyᵀ · 1
      ReadyOnes();
      gpu_gemv(ctx_, Trans::kYes, m_, num_output_, 1.0f, dy, ones_->data(), 1.0f, blobs_[1]->diff());
    }
    if (propagate_down[0]) {
      gpu_gemm(ctx_, Trans::kNo, transpose_ ? Trans::kYes : Trans::kNo, m_, k_, num_output_, 1.0f, dy,
               blobs_[0]->data(), 0.0f, bottom[0]->diff());
    }
  }

 private:
  // ---- GPU, 16-bit storage ----
  // The rows of y (M, N) as a ChannelLayout whose channel is the column: the bias's per-column kernels.
  ChannelLayout Columns() const { return {m_, num_output_, 1}; }

  void ForwardOn16Bit(const Blob& bottom, Blob* top) {
    cast::CastValues(ctx_, blobs_[0]->count(), {compute_type_, DataType::kFloat}, weights_compute_->raw_data(),
                     blobs_[0]->data());
    gpu_gemm_stored(ctx_, Trans::kNo, transpose_ ? Trans::kNo : Trans::kYes, m_, num_output_, k_, 1.0f, compute_type_,
                    bottom.raw_data(), weights_compute_->raw_data(), 0.0f, compute_type_, top->raw_data());
    if (bias_term_) scale::AddBias(ctx_, Columns(), compute_type_, blobs_[1]->data(), top->raw_data());
  }

  void BackwardOn16Bit(const Blob& top, bool propagate_down, Blob* bottom) {
    const void* dy = top.raw_diff();
    if (param_propagate_down(0)) {  // into the float master's diff
      if (transpose_) {
        gpu_gemm_stored(ctx_, Trans::kYes, Trans::kNo, k_, num_output_, m_, 1.0f, compute_type_, bottom->raw_data(), dy,
                        1.0f, DataType::kFloat, blobs_[0]->diff());
      } else {
        gpu_gemm_stored(ctx_, Trans::kYes, Trans::kNo, num_output_, k_, m_, 1.0f, compute_type_, dy, bottom->raw_data(),
                        1.0f, DataType::kFloat, blobs_[0]->diff());
      }
    }
    if (bias_term_ && param_propagate_down(1))
      scale::AddBiasGradient(ctx_, Columns(), partials_->data(), compute_type_, dy, blobs_[1]->diff());
    if (propagate_down) {
      gpu_gemm_stored(ctx_, Trans::kNo, transpose_ ? Trans::kYes : Trans::kNo, m_, k_, num_output_, 1.0f, compute_type_,
                      dy, weights_compute_->raw_data(), 0.0f, compute_type_, bottom->raw_diff());
    }
  }

  // Queues the fill of the ones vector when its memory does not hold M ones yet: at the first pass
  // (before any CUDA graph capture, which starts at the second iteration), and when M grows (a
  // Filter ahead of the layer) or the buffer was bound elsewhere. The fill is ordered with the GEMMs
  // on the compute stream.
  void ReadyOnes() {
    if (ones_->data() == ones_at_ && m_ <= ones_filled_) return;
    gpu_set(ctx_, m_, 1.0f, ones_->data());
    ones_at_ = ones_->data();
    ones_filled_ = m_;
  }

  int num_output_ = 0, axis_ = 1, k_ = 0, m_ = 0;
  bool transpose_ = false, bias_term_ = true;
  Blob* ones_ = nullptr;            // M ones (GPU nets with a bias only), memory of its own for the whole run
  const float* ones_at_ = nullptr;  // where the ones were last written, and how many
  int ones_filled_ = 0;
  DataType compute_type_ = DataType::kFloat;  // of x, y and their diffs (16-bit on the GPU only)
  Blob* weights_compute_ = nullptr;  // 16-bit: W rounded to the compute type, Forward to Backward
  Blob* partials_ = nullptr;        // 16-bit with a bias: the bias gradient's channel sums (a workspace)
};

CORTADO_REGISTER_LAYER(InnerProduct, InnerProductLayer);

}  // namespace cortado
