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
#include <algorithm>

#include "cortado/error.hpp"
#include "cortado/filler.hpp"
#include "cortado/layer_registry.hpp"
#include "cortado/math.hpp"
#include "cortado/math_gpu.hpp"

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
    if (ctx_.device() == Device::kGPU && bias_term_) ones_ = AddScratch();  // keeps its ones from pass to pass
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
    float* y = top[0]->data();
    gpu_gemm(ctx_, Trans::kNo, transpose_ ? Trans::kNo : Trans::kYes, m_, num_output_, k_, 1.0f,
             bottom[0]->data(), blobs_[0]->data(), 0.0f, y);
    if (!bias_term_) return;
    ReadyOnes();
    gpu_gemm(ctx_, Trans::kNo, Trans::kNo, m_, num_output_, 1, 1.0f, ones_->data(), blobs_[1]->data(), 1.0f, y);
  }

  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
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
};

CORTADO_REGISTER_LAYER(InnerProduct, InnerProductLayer);

}  // namespace cortado
