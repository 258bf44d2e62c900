// lrn.cpp — LRN (local response normalisation), Caffe's semantics. Bottom and top (N, C, H, W).
//
// Parameters (lrn_param): local_size n (odd, default 5), alpha (1), beta (0.75), k (1), norm_region.
//   ACROSS_CHANNELS: scale = k + alpha / n · Σ x² over the n channels centred on the element's
//                    (clipped to [0, C): missing channels count as zero);
//   WITHIN_CHANNEL:  scale = 1 + alpha / n² · Σ x² over the n × n square centred on the element in its
//                    own plane. This is what Caffe's composed sub-layers compute: Power (x²), AVE
//                    Pooling (kernel n, pad (n − 1)/2, stride 1, whose window is never cut by the
//                    padded border, so it always divides by n², padding counting as zeros), then
//                    Power (shift 1, scale alpha, power −beta) — k is not used, as in Caffe;
//   y = x · scale^(−beta).
// Backward (the windows are symmetric, so the sum runs over the element's own window):
//   dx = dy · scale^(−beta) − 2 · beta · (alpha / n or alpha / n²) · x · Σ_window dy · y / scale.
// The scale is a scratch buffer kept from Forward for Backward. Not in place (Backward reads x and y).
// Each element sums its own window in float, in increasing index order (OpenMP over elements).
// CPU engines: those loops, or oneDNN's LRN primitives (onednn_engine.hpp; the scale is then oneDNN's
// workspace, kept in the same scratch), chosen as Convolution's are: engine CAFFE, engine ONEDNN, else
// the CPU engine setting, which leaves it to timing (cpu_engine_choice.hpp). They agree up to rounding.
// GPU: the same per-element window sums as kernels (cuda/lrn.cu, lrn_gpu.hpp).
#include <glog/logging.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "cortado/error.hpp"
#include "cortado/layer_registry.hpp"
#include "cpu_engine_choice.hpp"
#include "lrn_gpu.hpp"
#include "onednn_engine.hpp"

namespace cortado {

class LRNLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "LRN"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override {
    const LRNParameter& p = param_.lrn_param();
    CORTADO_REQUIRE(p.local_size() % 2 == 1, Describe(), ": local_size must be odd, got ", p.local_size());
    CORTADO_REQUIRE(top[0] != bottom[0], Describe(), ": cannot run in place; give the top its own name");
    const bool across = p.norm_region() == LRNParameter::ACROSS_CHANNELS;
    const float n = static_cast<float>(p.local_size());
    shape_.size = static_cast<int>(p.local_size());
    shape_.across = across;
    shape_.k = across ? p.k() : 1.0f;
    shape_.coeff = across ? p.alpha() / n : p.alpha() / (n * n);
    shape_.beta = p.beta();
    scale_ = AddStepScratch();
    if (ctx_.device() == Device::kCPU) {
      onednn_scratch_ = AddWorkspace();  // oneDNN's scratchpad, inside one call
      RequireOneDnnWhereAsked(p.engine() == LRNParameter::ONEDNN, Describe());
    }
  }

  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    const Blob& x = *bottom[0];
    CORTADO_REQUIRE(x.num_axes() == 4, Describe(), ": the bottom must be 4-D (num, channels, height, width), got ",
                    x.shape_string());
    shape_.num = x.shape(0);
    shape_.channels = x.shape(1);
    shape_.height = x.shape(2);
    shape_.width = x.shape(3);
    // After the memory plan (a Filter upstream changed the batch), the engine chosen at set-up stays.
    const bool planned = top[0]->data() != nullptr;
    top[0]->ReshapeLike(x);
    scale_->ReshapeLike(x);
    if (ctx_.device() == Device::kCPU) ChooseCpuEngine(planned);
  }

  const char* chosen_engine() const override {
    if (ctx_.device() != Device::kCPU) return nullptr;
    return onednn_ ? (onednn_layout_ == OneDnnLayout::kNative ? "onednn" : "onednn_plain") : "caffe";
  }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    if (onednn_) {
      OneDnnLrnForward(*onednn_, bottom[0]->data(), top[0]->data(), scale_->data(), onednn_scratch_->data());
    } else {
      ForwardLoops(bottom[0]->data(), scale_->data(), top[0]->data());
    }
  }

  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    if (onednn_) {
      OneDnnLrnBackward(*onednn_, bottom[0]->data(), top[0]->diff(), bottom[0]->diff(), scale_->data(),
                        onednn_scratch_->data());
    } else {
      BackwardLoops(bottom[0]->data(), top[0]->data(), scale_->data(), top[0]->diff(), bottom[0]->diff());
    }
  }

  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    LrnForwardGpu(ctx_, shape_, bottom[0]->data(), scale_->data(), top[0]->data());
  }

  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    LrnBackwardGpu(ctx_, shape_, bottom[0]->data(), top[0]->data(), scale_->data(), top[0]->diff(),
                   bottom[0]->diff());
  }

 private:
  int64_t Count() const { return shape_.num * shape_.channels * shape_.height * shape_.width; }

  void ForwardLoops(const float* x, float* scale, float* y) const {
    const int64_t count = Count();
#pragma omp parallel for schedule(static) if (count >= 65536)
    for (int64_t i = 0; i < count; ++i) {
      float sum = 0;
      ForWindow(i, [&](int64_t j) { sum += x[j] * x[j]; });
      scale[i] = shape_.k + shape_.coeff * sum;
      y[i] = x[i] * std::pow(scale[i], -shape_.beta);
    }
  }

  void BackwardLoops(const float* x, const float* y, const float* scale, const float* dy, float* dx) const {
    const float factor = 2.0f * shape_.beta * shape_.coeff;
    const int64_t count = Count();
#pragma omp parallel for schedule(static) if (count >= 65536)
    for (int64_t i = 0; i < count; ++i) {
      float sum = 0;
      ForWindow(i, [&](int64_t j) { sum += dy[j] * y[j] / scale[j]; });
      dx[i] = dy[i] * std::pow(scale[i], -shape_.beta) - factor * x[i] * sum;
    }
  }

  // ---- CPU: choosing the engine ---------------------------------------------------------------------
  // Sets onednn_ (null: Cortado's loops) for the current shape: from the prototxt's engine and the CPU
  // engine setting, timing the two when both leave the choice open. `planned`: the memory plan is made,
  // and the engine chosen then stays, within the buffers planned for it.
  void ChooseCpuEngine(bool planned) {
    const EngineRule rule = CpuEngineRule(param_.lrn_param(), ctx_.plan_only());
    bool use_onednn = rule != EngineRule::kOwn;
    bool timed = rule == EngineRule::kTimed;
    OneDnnLayout layout = OneDnnLayout::kNative;
    if (planned) use_onednn = onednn_ != nullptr, timed = false, layout = onednn_layout_;
    onednn_.reset();
    onednn_scratch_->Reshape(std::vector<int>{0});
    if (!use_onednn || Count() == 0) return;
    if (timed) {
      const int winner = ChooseEngineByTiming(ShapeKey(), Describe(), TimingCandidates());
      if (winner == 0) return;
      layout = winner == 1 ? OneDnnLayout::kPlain : OneDnnLayout::kNative;
    }
    std::string why;
    onednn_ = CreateOneDnnLrn(shape_, layout, &why);
    onednn_layout_ = layout;
    if (!onednn_) {
      CORTADO_REQUIRE(!planned, Describe(), ": oneDNN has no LRN for the new shape (", why, ")");
      LOG(INFO) << Describe() << ": oneDNN has no LRN for this shape (" << why << "): Cortado's";
      return;
    }
    FitOneDnnBuffers(Describe(), planned, OneDnnLrnScratchBytes(*onednn_), *onednn_scratch_,
                     OneDnnLrnWorkspaceBytes(*onednn_), scale_, static_cast<int>(Count()));
  }

  std::string ShapeKey() const {
    std::ostringstream s;
    s << "LRN:" << (shape_.across ? "across," : "within,") << shape_.num << ',' << shape_.channels << ','
      << shape_.height << ',' << shape_.width << ',' << shape_.size;
    return s.str();
  }

  // Cortado's loops, oneDNN on NCHW, oneDNN on channel blocks (ChooseEngineByTiming's indices 0, 1, 2):
  // forward and backward on buffers of their own (set-up time, before the memory plan).
  std::vector<EngineCandidate> TimingCandidates() const {
    const auto input = [this] {
      std::vector<float> v(Count());
      FillForTiming(&v);
      return v;
    };
    std::vector<EngineCandidate> candidates{{"caffe", [this, input](std::string*) {
                                               const std::vector<float> x = input(), dy = input();
                                               std::vector<float> scale(x.size()), y(x.size()), dx(x.size());
                                               return BestMilliseconds([&] {
                                                 ForwardLoops(x.data(), scale.data(), y.data());
                                                 BackwardLoops(x.data(), y.data(), scale.data(), dy.data(), dx.data());
                                               });
                                             }}};
    for (OneDnnLayout layout : {OneDnnLayout::kPlain, OneDnnLayout::kNative}) {
      candidates.push_back({layout == OneDnnLayout::kPlain ? "onednn_plain" : "onednn",
                            [this, input, layout](std::string* why) {
                              const OneDnnLrnPtr lrn = CreateOneDnnLrn(shape_, layout, why);
                              if (!lrn) return -1.0;
                              const std::vector<float> x = input(), dy = input();
                              std::vector<float> y(x.size()), dx(x.size()),
                                  workspace(FloatsFor(OneDnnLrnWorkspaceBytes(*lrn))),
                                  scratch(FloatsFor(OneDnnLrnScratchBytes(*lrn)));
                              return BestMilliseconds([&] {
                                OneDnnLrnForward(*lrn, x.data(), y.data(), workspace.data(), scratch.data());
                                OneDnnLrnBackward(*lrn, x.data(), dy.data(), dx.data(), workspace.data(), scratch.data());
                              });
                            }});
    }
    return candidates;
  }

  // Calls visit(j) for every element j in the window of element i, in increasing order of j.
  template <typename Visit>
  void ForWindow(int64_t i, Visit visit) const {
    const int half = shape_.size / 2;
    const int64_t plane = static_cast<int64_t>(shape_.height) * shape_.width;
    if (shape_.across) {
      const int c = static_cast<int>(i / plane % shape_.channels);
      const int lo = std::max(c - half, 0), hi = std::min(c + half, shape_.channels - 1);
      for (int cc = lo; cc <= hi; ++cc) visit(i + (cc - c) * plane);
      return;
    }
    const int64_t base = i - i % plane;
    const int h = static_cast<int>(i % plane / shape_.width), w = static_cast<int>(i % shape_.width);
    const int h_lo = std::max(h - half, 0), h_hi = std::min(h + half, shape_.height - 1);
    const int w_lo = std::max(w - half, 0), w_hi = std::min(w + half, shape_.width - 1);
    for (int hh = h_lo; hh <= h_hi; ++hh)
      for (int ww = w_lo; ww <= w_hi; ++ww) visit(base + static_cast<int64_t>(hh) * shape_.width + ww);
  }

  LrnShape shape_{};
  Blob* scale_ = nullptr;  // k + coeff · Σ_window x², like the bottom; oneDNN's workspace with its engine
  OneDnnLrnPtr onednn_{nullptr, nullptr};  // CPU, oneDNN engine: the primitives for this shape
  OneDnnLayout onednn_layout_ = OneDnnLayout::kNative;
  Blob* onednn_scratch_ = nullptr;         // CPU: oneDNN's scratchpad (a workspace)
};

CORTADO_REGISTER_LAYER(LRN, LRNLayer);

}  // namespace cortado
