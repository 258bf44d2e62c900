// dropout.cpp — Dropout (dropout_param.dropout_ratio r, default 0.5).
// TRAIN: y = x · m / (1 − r), m ~ Bernoulli(1 − r) drawn afresh each Forward from the context's
// RNG; Backward applies the same mask: dx = dy · m / (1 − r). TEST: y = x, dx = dy.
// The mask is kept, already scaled (0 or 1 / (1 − r)), in a scratch buffer. In place works too.
// GPU: the mask comes from a counter-based hash of (seed, element index) in the kernel
// (cuda/dropout.cu), the seed drawn from the context's RNG on the host before each step (PrepareStep)
// and read by the kernel from the context's StepInputs, so a captured CUDA graph draws a new mask at
// every replay — the same distribution as the CPU's, not the same numbers.
#include <cstdint>

#include "cortado/error.hpp"
#include "cortado/kernels/neuron.hpp"
#include "cortado/layer_registry.hpp"
#include "cortado/math.hpp"
#include "cortado/math_gpu.hpp"
#include "cortado/step_inputs.hpp"

namespace cortado {

class DropoutLayer : public NeuronLayer {
 public:
  using NeuronLayer::NeuronLayer;
  const char* type() const override { return "Dropout"; }
  bool BackwardReadsBottomData(int) const override { return false; }  // the mask only
  bool BackwardReadsTopData(int) const override { return false; }
  bool InPlaceSafe() const override { return true; }

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override {
    const float ratio = param_.dropout_param().dropout_ratio();
    CORTADO_REQUIRE(ratio >= 0.0f && ratio < 1.0f, Describe(),
                    ": dropout_ratio must be in [0, 1), got ", ratio);
    scale_ = 1.0f / (1.0f - ratio);
    // A 32-bit draw u drops its element when u < ratio · 2³².
    threshold_ = static_cast<uint64_t>(static_cast<double>(ratio) * 4294967296.0);
    if (phase() == TRAIN) mask_ = AddStepScratch();
    if (mask_ && ctx_.device() == Device::kGPU) seed_slot_ = StepInputsOf(ctx_).Reserve();
  }

  void PrepareStep() override {
    if (seed_slot_ < 0) return;
    std::mt19937& rng = ctx_.rng();
    const uint64_t high = rng();
    StepInputsOf(ctx_).SetWord(seed_slot_, (high << 32) | rng());
  }

  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    NeuronLayer::Reshape(bottom, top);
    if (mask_) mask_->ReshapeLike(*bottom[0]);
  }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const float* x = bottom[0]->data();
    float* y = top[0]->data();
    const int64_t n = bottom[0]->count();
    if (!mask_) {
      if (y != x) cpu_copy(n, x, y);
      return;
    }
    float* m = mask_->data();
    std::mt19937& rng = ctx_.rng();
    for (int64_t i = 0; i < n; ++i) m[i] = rng() >= threshold_ ? scale_ : 0.0f;
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * m[i];
  }

  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const float* dy = top[0]->diff();
    float* dx = bottom[0]->diff();
    const int64_t n = top[0]->count();
    if (!mask_) {
      if (dx != dy) cpu_copy(n, dy, dx);
      return;
    }
    const float* m = mask_->data();
    for (int64_t i = 0; i < n; ++i) dx[i] = dy[i] * m[i];
  }

  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    const int64_t n = bottom[0]->count();
    if (!mask_) {
      gpu_copy(ctx_, n, bottom[0]->data(), top[0]->data());  // nothing when in place
      return;
    }
    DropoutForwardGpu(ctx_, n, StepInputsOf(ctx_).device_word(seed_slot_), threshold_, scale_, bottom[0]->data(), mask_->data(), top[0]->data());
  }

  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const int64_t n = top[0]->count();
    if (!mask_) {
      gpu_copy(ctx_, n, top[0]->diff(), bottom[0]->diff());
      return;
    }
    gpu_mul(ctx_, n, top[0]->diff(), mask_->data(), bottom[0]->diff());
  }

 private:
  Blob* mask_ = nullptr;
  int seed_slot_ = -1;  // GPU, TRAIN: the seed's StepInputs slot
  float scale_ = 2.0f;
  uint64_t threshold_ = 0;
};

CORTADO_REGISTER_LAYER(Dropout, DropoutLayer);

}  // namespace cortado
