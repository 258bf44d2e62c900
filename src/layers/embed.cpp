// embed.cpp — Embed: a lookup table of learned vectors (Caffe's EmbedLayer), e.g. word embeddings.
// Bottom: indices x of any shape (M = count values, each an integer in [0, input_dim)). Top: the
// bottom's shape followed by num_output. Learnable: W (input_dim, num_output), and b (num_output)
// when bias_term (default true), filled by weight_filler / bias_filler.
//   y[i, :] = W[x_i, :] (+ b)
//   dW[x_i, :] += dy[i, :]  (repeated indices add up),  db += Σ_i dy[i, :];  the indices get none.
// An index that is not an integer in [0, input_dim) is an error naming the layer (Caffe checks this
// only in debug builds); a request for the gradient of the indices is an error, as in Caffe.
// GPU: embed_gpu.hpp (cuda/embed.cu): one gather kernel that also marks a bad index in a device word
// read back at the end of Forward (as SoftmaxWithLoss checks labels), an atomicAdd scatter for dW, and
// gpu_gemv with a vector of ones for db.
#include <cmath>

#include "cortado/error.hpp"
#include "cortado/filler.hpp"
#include "cortado/layer_registry.hpp"
#include "cortado/math_gpu.hpp"
#include "embed_gpu.hpp"

namespace cortado {

class EmbedLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Embed"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }
  bool AllowForceBackward(int) const override { return false; }  // indices have no gradient
  bool IsCapturable() const override { return false; }  // its GPU forward waits to check the indices
  bool BackwardReadsTopData(int) const override { return false; }  // the indices only, for dW

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override {
    const EmbedParameter& p = param_.embed_param();
    CORTADO_REQUIRE(p.num_output() > 0, Describe(), ": embed_param.num_output must be positive");
    CORTADO_REQUIRE(p.input_dim() > 0, Describe(), ": embed_param.input_dim must be positive");
    num_output_ = static_cast<int>(p.num_output());
    input_dim_ = static_cast<int>(p.input_dim());
    bias_term_ = p.bias_term();
    blobs_.push_back(std::make_shared<Blob>(std::vector<int>{input_dim_, num_output_}));
    if (bias_term_) blobs_.push_back(std::make_shared<Blob>(std::vector<int>{num_output_}));
    if (ctx_.device() == Device::kGPU) {
      flag_ = AddStepScratch();
      if (bias_term_) ones_ = AddStepScratch();  // set before each use
    }
  }

  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    m_ = bottom[0]->count();
    std::vector<int> shape = bottom[0]->shape();
    shape.push_back(num_output_);
    top[0]->Reshape(shape);
    if (flag_) flag_->Reshape(std::vector<int>{1});
    if (ones_) ones_->Reshape(std::vector<int>{static_cast<int>(m_)});
  }

  void InitParams() override {
    const EmbedParameter& p = param_.embed_param();
    FillBlob(p.weight_filler(), blobs_[0].get(), ctx_.rng());
    if (bias_term_) FillBlob(p.bias_filler(), blobs_[1].get(), ctx_.rng());
  }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const float* x = bottom[0]->data();
    const float* w = blobs_[0]->data();
    const float* b = bias_term_ ? blobs_[1]->data() : nullptr;
    float* y = top[0]->data();
    for (int64_t i = 0; i < m_; ++i) {
      if (!IsIndex(x[i])) FailBadIndex(x[i], i);
      const float* row = w + static_cast<int64_t>(x[i]) * num_output_;
      float* out = y + i * num_output_;
      for (int j = 0; j < num_output_; ++j) out[j] = b ? row[j] + b[j] : row[j];
    }
  }

  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    RefuseIndexGradient(propagate_down);
    const float* x = bottom[0]->data();
    const float* dy = top[0]->diff();
    if (param_propagate_down(0)) {
      float* dw = blobs_[0]->diff();
      for (int64_t i = 0; i < m_; ++i) {
        float* row = dw + static_cast<int64_t>(x[i]) * num_output_;
        for (int j = 0; j < num_output_; ++j) row[j] += dy[i * num_output_ + j];
      }
    }
    if (bias_term_ && param_propagate_down(1)) {
      float* db = blobs_[1]->diff();
      for (int64_t i = 0; i < m_; ++i)
        for (int j = 0; j < num_output_; ++j) db[j] += dy[i * num_output_ + j];
    }
  }

  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    float bad = 0;
    const int64_t at = EmbedForwardGpu(ctx_, m_, num_output_, input_dim_, bottom[0]->data(), blobs_[0]->data(),
                                       bias_term_ ? blobs_[1]->data() : nullptr, top[0]->data(), flag_->data(),
                                       &bad);
    if (at >= 0) FailBadIndex(bad, at);
  }

  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    RefuseIndexGradient(propagate_down);
    const float* dy = top[0]->diff();
    if (param_propagate_down(0))
      EmbedWeightGradientGpu(ctx_, m_, num_output_, input_dim_, bottom[0]->data(), dy, blobs_[0]->diff());
    if (bias_term_ && param_propagate_down(1) && m_ > 0) {  // db += dyᵀ · 1
      gpu_set(ctx_, m_, 1.0f, ones_->data());
      gpu_gemv(ctx_, Trans::kYes, static_cast<int>(m_), num_output_, 1.0f, dy, ones_->data(), 1.0f,
               blobs_[1]->diff());
    }
  }

 private:
  // Caffe's test: static_cast<int>(v) lies in [0, input_dim) and converts back to v.
  bool IsIndex(float v) const { return v >= 0.0f && v < static_cast<float>(input_dim_) && v == std::floor(v); }

  [[noreturn]] void FailBadIndex(float value, int64_t position) const {
    Fail(Describe(), ": input ", value, " (at position ", position,
         ") is not an index; inputs must be integers in [0, ", input_dim_, ") (input_dim)");
  }

  void RefuseIndexGradient(const std::vector<bool>& propagate_down) const {
    CORTADO_REQUIRE(propagate_down.empty() || !propagate_down[0], Describe(),
                    ": cannot backpropagate to its input (indices have no gradient); set propagate_down: false "
                    "on it");
  }

  int num_output_ = 0, input_dim_ = 0;
  bool bias_term_ = true;
  int64_t m_ = 0;
  Blob* flag_ = nullptr;  // GPU nets: the bad-index flag
  Blob* ones_ = nullptr;  // GPU nets with a bias: M ones
};

CORTADO_REGISTER_LAYER(Embed, EmbedLayer);

}  // namespace cortado
