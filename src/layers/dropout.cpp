// dropout.cpp — Dropout (dropout_param.dropout_ratio r, default 0.5).
// TRAIN: y = x · m / (1 − r), m ~ Bernoulli(1 − r) drawn afresh each Forward; Backward applies the
// same mask: dx = dy · m / (1 − r). TEST: y = x, dx = dy.
// The mask is kept, already scaled (0 or 1 / (1 − r)), in a scratch buffer. In place works too.
// The mask comes from a counter-based hash of (seed, element index) on both devices (dropout_math.hpp),
// so one seed gives one mask on either. The seed is drawn from the context's RNG: on the CPU at each
// Forward; on the GPU on the host before each step (PrepareStep) and read by the kernel from the
// context's StepInputs, so a captured CUDA graph draws a new mask at every replay.
#include <cstdint>

#include "cortado/error.hpp"
#include "cortado/kernels/arithmetic.hpp"  // Product
#include "cortado/layer_registry.hpp"
#include "cortado/math_gpu.hpp"  // copy_on
#include "cortado/step_inputs.hpp"
#include "dropout_math.hpp"

namespace cortado {

class DropoutLayer : public EitherDevice<NeuronLayer> {
 public:
  using EitherDevice::EitherDevice;
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
    if (mask_ && ctx_.device() == Device::kGPU && !ctx_.plan_only())  // a plan has no GPU
      seed_slot_ = StepInputsOf(ctx_).Reserve();
  }

  void PrepareStep() override {
    if (seed_slot_ < 0) return;
    StepInputsOf(ctx_).SetWord(seed_slot_, dropout::DrawSeed(ctx_.rng()));
  }

  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    NeuronLayer::Reshape(bottom, top);
    if (mask_) mask_->ReshapeLike(*bottom[0]);
  }

 protected:
  void Forward_any(const BlobVec& bottom, const BlobVec& top) override {
    const int64_t n = bottom[0]->count();
    if (!mask_) {
      copy_on(ctx_, n, bottom[0]->data(), top[0]->data());  // nothing when in place
      return;
    }
    const uint64_t* seed = &seed_host_;
    if (ctx_.device() == Device::kGPU) {
      seed = StepInputsOf(ctx_).device_word(seed_slot_);
    } else {
      seed_host_ = dropout::DrawSeed(ctx_.rng());
    }
    ForEach(ctx_, n, dropout::Forward{seed, threshold_, scale_, bottom[0]->data(), mask_->data(), top[0]->data()});
  }

  void Backward_any(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const int64_t n = top[0]->count();
    if (!mask_) {
      copy_on(ctx_, n, top[0]->diff(), bottom[0]->diff());  // nothing when in place
      return;
    }
    Map(ctx_, n, arithmetic::Product{}, bottom[0]->diff(), top[0]->diff(), mask_->data());
  }

 private:
  Blob* mask_ = nullptr;
  int seed_slot_ = -1;      // GPU, TRAIN: the seed's StepInputs slot
  uint64_t seed_host_ = 0;  // CPU, TRAIN: the seed of the last Forward
  float scale_ = 2.0f;
  uint64_t threshold_ = 0;
};

CORTADO_REGISTER_LAYER(Dropout, DropoutLayer);

}  // namespace cortado
