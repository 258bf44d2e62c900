// pooling.cpp — Pooling (MAX, AVE, STOCHASTIC) over 2-D windows, Caffe's semantics.
//
// Bottom (N, C, H, W) → top (N, C, PH, PW), with
//   PH = ceil((H + 2·pad_h − kernel_h) / stride_h) + 1   (round_mode CEIL, the default; FLOOR floors)
// and, when there is padding, one window fewer if the last would start at or beyond H + pad_h
// (likewise PW). global_pooling pools the whole H × W. Window (ph, pw) covers rows
// [ph·stride_h − pad_h, … + kernel_h) clipped to the image (columns likewise).
//   MAX: y = max over the window; the optional second top is the argmax h·W + w (as a float).
//        dx[argmax] += dy.
//   AVE: y = Σ window / size, where size counts the window clipped to the *padded* image
//        (rows up to H + pad_h), so padding counts as zeros. dx += dy / size over the window.
//   STOCHASTIC (no padding, as in Caffe; activations meant to be non-negative):
//     TRAIN: y = one element of the window, sampled with probability proportional to its value (the
//        first in row-major order whose running sum reaches u·Σ window, u uniform in (0, 1]); its
//        index is kept and dx[index] += dy. The draws come from a seed taken from the context's RNG
//        each Forward (on a GPU: before each step, into the context's StepInputs, where the kernel
//        reads it, so a captured CUDA graph draws anew at each replay), so a run is reproducible by seed.
//     TEST: y = Σx² / Σx over the window (0 when Σx ≤ 0). dx += dy·(2x − y) / Σx, the exact gradient
//        (Caffe reads a stale sample index here).
//     Caffe runs STOCHASTIC on the GPU only; both devices here share the window arithmetic
//     (pooling_math.hpp), so they draw the same samples.
// A window left empty (possible only without padding when stride > kernel) gives y = 0.
// CPU engines: Cortado's loops (OpenMP over the planes), or oneDNN's primitives (onednn_engine.hpp)
// for MAX with no mask top (the argmaxes are oneDNN's own workspace, kept in the mask scratch) and for
// AVE where no window is cut by the padded border (there oneDNN's divisor, the kernel's size, is
// Caffe's). Chosen as Convolution's are: engine CAFFE, engine ONEDNN, else the CPU engine setting,
// which leaves it to timing (cpu_engine_choice.hpp). The two compute the same maxima, and sums alike up
// to rounding.
// GPU: cuda/pooling.cu (its launchers at the end of pooling_math.hpp), the same windows and arithmetic:
// forward equals the CPU's bit for bit (STOCHASTIC's TEST values up to rounding).
// Storage. MAX and AVE with one top compute on x, y, dy and dx of one storage type, float or 16-bit
// (bf16, fp16: the net's plan gives this layer such blobs without Casts, PoolingComputesOn), on either
// device: values read as float, the windows' maxima, sums and gradients in float as for float blobs,
// each output rounded once; the argmaxes stay a float scratch. On the CPU 16-bit blobs run Cortado's
// loops (oneDNN's pooling here is float only), the backward summing each plane in a float buffer of
// its thread's. STOCHASTIC and a MAX with the mask top are float only.
// Layout. On the GPU, MAX and AVE with one top also run channels-last (NHWC bottom and top,
// PoolingRunsChannelsLast), the kernels indexing x and y through pooling_math.hpp's ImageLayout: the
// same windows and results, argmaxes h·W + w within the plane as in NCHW. The CPU reads NCHW only.
#include <glog/logging.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "cortado/cpu_engine.hpp"  // OneDnnEnabled
#include "cortado/error.hpp"
#include "cortado/layer_registry.hpp"
#include "cortado/math.hpp"
#include "cortado/step_inputs.hpp"
#include "channels_last.hpp"
#include "cpu_engine_choice.hpp"
#include "onednn_engine.hpp"
#include "pooling_math.hpp"  // the window arithmetic; PoolShape and the GPU launchers

namespace cortado {

class PoolingLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Pooling"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int MinTopBlobs() const override { return 1; }
  int MaxTopBlobs() const override {
    return param_.pooling_param().pool() == PoolingParameter::MAX ? 2 : 1;
  }
  // MAX and STOCHASTIC TRAIN route dy through the argmax (the mask top's data, or a scratch), AVE
  // reads nothing; only STOCHASTIC TEST reads x and y.
  bool BackwardReadsBottomData(int) const override { return StochasticTest(); }
  bool BackwardReadsTopData(int i) const override { return i == 1 || StochasticTest(); }

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override {
    const PoolingParameter& p = param_.pooling_param();
    global_ = p.global_pooling();
    if (global_) {
      CORTADO_REQUIRE(!p.has_kernel_size() && !p.has_kernel_h() && !p.has_kernel_w(), Describe(),
                      ": with global_pooling the kernel size is the input size; do not give kernel_size");
    } else if (p.has_kernel_size()) {
      CORTADO_REQUIRE(!p.has_kernel_h() && !p.has_kernel_w(), Describe(),
                      ": give kernel_size or kernel_h and kernel_w, not both");
      kernel_h_ = kernel_w_ = static_cast<int>(p.kernel_size());
    } else {
      CORTADO_REQUIRE(p.has_kernel_h() && p.has_kernel_w(), Describe(),
                      ": kernel_size (or both kernel_h and kernel_w) is required");
      kernel_h_ = static_cast<int>(p.kernel_h());
      kernel_w_ = static_cast<int>(p.kernel_w());
    }
    if (p.has_pad_h() || p.has_pad_w()) {
      CORTADO_REQUIRE(!p.has_pad() && p.has_pad_h() && p.has_pad_w(), Describe(),
                      ": give pad, or both pad_h and pad_w");
      pad_h_ = static_cast<int>(p.pad_h());
      pad_w_ = static_cast<int>(p.pad_w());
    } else {
      pad_h_ = pad_w_ = static_cast<int>(p.pad());
    }
    if (p.has_stride_h() || p.has_stride_w()) {
      CORTADO_REQUIRE(!p.has_stride() && p.has_stride_h() && p.has_stride_w(), Describe(),
                      ": give stride, or both stride_h and stride_w");
      stride_h_ = static_cast<int>(p.stride_h());
      stride_w_ = static_cast<int>(p.stride_w());
    } else {
      stride_h_ = stride_w_ = static_cast<int>(p.stride());
    }
    CORTADO_REQUIRE(stride_h_ > 0 && stride_w_ > 0, Describe(), ": stride must be positive");
    if (global_) {
      CORTADO_REQUIRE(pad_h_ == 0 && pad_w_ == 0 && stride_h_ == 1 && stride_w_ == 1, Describe(),
                      ": global_pooling takes no pad and stride 1");
    } else {
      CORTADO_REQUIRE(kernel_h_ > 0 && kernel_w_ > 0, Describe(), ": kernel size must be positive");
      CORTADO_REQUIRE(pad_h_ < kernel_h_ && pad_w_ < kernel_w_, Describe(), ": pad (", pad_h_, ", ",
                      pad_w_, ") must be smaller than the kernel (", kernel_h_, ", ", kernel_w_, ")");
    }
    max_ = p.pool() == PoolingParameter::MAX;
    stochastic_ = p.pool() == PoolingParameter::STOCHASTIC;
    CORTADO_REQUIRE(!stochastic_ || (pad_h_ == 0 && pad_w_ == 0), Describe(),
                    ": padding is implemented only for AVE and MAX pooling, not STOCHASTIC");
    // One storage type for x, y and their gradients; 16-bit for MAX and AVE with one top alone.
    type_ = bottom[0]->data_type();
    CORTADO_REQUIRE(bottom[0]->diff_type() == type_ && top[0]->data_type() == type_ && top[0]->diff_type() == type_,
                    Describe(), ": the bottom and the top must have one storage type for data and diff alike");
    CORTADO_REQUIRE(type_ == DataType::kFloat || (!stochastic_ && top.size() == 1), Describe(), ": ",
                    DataTypeName(type_), " storage: only MAX and AVE pooling with one top compute on 16-bit "
                    "storage (STOCHASTIC and the mask top are float)");
    if (max_ && top.size() == 1) mask_ = AddStepScratch();
    if (ctx_.device() == Device::kCPU) {
      cpu_scratch_ = AddWorkspace();  // oneDNN's scratchpad, or the 16-bit backward's float planes
      RequireOneDnnWhereAsked(p.engine() == PoolingParameter::ONEDNN, Describe());
    }
    if (stochastic_) pick_ = AddStepScratch();
    if (stochastic_ && phase() == TRAIN && ctx_.device() == Device::kGPU && !ctx_.plan_only())
      seed_slot_ = StepInputsOf(ctx_).Reserve();
  }

  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    const Blob& x = *bottom[0];
    CORTADO_REQUIRE(x.num_axes() == 4, Describe(), ": the bottom must be 4-D (num, channels, height, "
                    "width), got ", x.shape_string());
    planes_ = static_cast<int64_t>(x.shape(0)) * x.shape(1);
    channels_ = x.shape(1);
    nhwc_ = x.channels_last();
    CORTADO_REQUIRE(!nhwc_ || (ctx_.device() == Device::kGPU && !stochastic_ && top.size() == 1), Describe(),
                    ": a channels-last (NHWC) bottom is pooled only on the GPU, by MAX or AVE with one top");
    height_ = x.shape(2);
    width_ = x.shape(3);
    if (global_) {
      kernel_h_ = height_;
      kernel_w_ = width_;
    }
    out_h_ = OutputSize("height", height_, kernel_h_, pad_h_, stride_h_);
    out_w_ = OutputSize("width", width_, kernel_w_, pad_w_, stride_w_);
    const std::vector<int> shape{x.shape(0), x.shape(1), out_h_, out_w_};
    // After the memory plan (a Filter upstream changed the batch), the engine chosen at set-up stays.
    const bool planned = top[0]->raw_data() != nullptr;
    for (Blob* y : top) y->Reshape(shape);
    CORTADO_REQUIRE(top[0]->channels_last() == nhwc_, Describe(), ": the top must be in the bottom's layout (",
                    nhwc_ ? "NHWC" : "NCHW", ")");
    if (mask_) mask_->Reshape(shape);
    if (pick_) pick_->Reshape(shape);
    if (ctx_.device() == Device::kCPU) ChooseCpuEngine(planned);
  }

  const char* chosen_engine() const override {
    if (ctx_.device() != Device::kCPU || stochastic_) return nullptr;
    return onednn_ ? "onednn" : "caffe";
  }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    if (stochastic_) {
      StochasticForward(planes_, bottom[0]->data(), top[0]->data());
    } else if (onednn_) {
      OneDnnPoolingForward(*onednn_, bottom[0]->data(), top[0]->data(), mask_ ? mask_->data() : nullptr,
                           cpu_scratch_->data());
    } else {
      VisitStorageType(type_, [&](auto zero) {
        using T = decltype(zero);
        ForwardLoops(planes_, bottom[0]->data_as<T>(), top[0]->data_as<T>(), Mask(top));
      });
    }
  }

  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    if (onednn_) {
      OneDnnPoolingBackward(*onednn_, top[0]->diff(), bottom[0]->diff(), mask_ ? mask_->data() : nullptr,
                            cpu_scratch_->data());
    } else if (stochastic_ && phase() != TRAIN) {
      float* dx = bottom[0]->diff();
      cpu_set(bottom[0]->count(), 0.0f, dx);
      StochasticTestBackward(planes_, bottom[0]->data(), top[0]->data(), top[0]->diff(), dx);
    } else {
      VisitStorageType(type_, [&](auto zero) {
        using T = decltype(zero);
        BackwardLoops(planes_, top[0]->diff_as<T>(), Mask(top), bottom[0]->diff_as<T>(), cpu_scratch_->data());
      });
    }
  }

  // GPU, STOCHASTIC, TRAIN: this step's seed, where the kernel reads it.
  void PrepareStep() override {
    if (seed_slot_ >= 0) StepInputsOf(ctx_).SetWord(seed_slot_, DrawSeed());
  }

  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    const PoolShape s = Shape();
    if (stochastic_ && phase() == TRAIN) {
      StoPoolForwardTrainGpu(ctx_, s, StepInputsOf(ctx_).device_word(seed_slot_), bottom[0]->data(), top[0]->data(),
                             pick_->data());
    } else if (stochastic_) {
      StoPoolForwardTestGpu(ctx_, s, bottom[0]->data(), top[0]->data(), pick_->data());
    } else {
      VisitStorageType(type_, [&](auto zero) {
        using T = decltype(zero);
        const T* x = bottom[0]->data_as<T>();
        T* y = top[0]->data_as<T>();
        if (max_) {
          MaxPoolForwardGpu(ctx_, s, x, y, Mask(top));
        } else {
          AvePoolForwardGpu(ctx_, s, x, y);
        }
      });
    }
  }

  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const PoolShape s = Shape();
    if (stochastic_ && phase() != TRAIN) {
      StoPoolBackwardTestGpu(ctx_, s, bottom[0]->data(), top[0]->data(), top[0]->diff(), pick_->data(),
                             bottom[0]->diff());
      return;
    }
    VisitStorageType(type_, [&](auto zero) {
      using T = decltype(zero);
      const T* dy = top[0]->diff_as<T>();
      T* dx = bottom[0]->diff_as<T>();
      if (Mask(top)) {
        MaxPoolBackwardGpu(ctx_, s, dy, Mask(top), dx);
      } else {
        AvePoolBackwardGpu(ctx_, s, dy, dx);
      }
    });
  }

 private:
  bool StochasticTest() const { return stochastic_ && phase() != TRAIN; }

  // Where MAX and AVE write, and their backward and STOCHASTIC TRAIN's read, the position each output
  // came from: MAX's argmaxes (the mask top, else the scratch), TRAIN's samples (which route the
  // gradient as argmaxes do); null for AVE. (STOCHASTIC TEST keeps its window sums in pick_.)
  float* Mask(const BlobVec& top) const {
    if (max_) return (top.size() > 1 ? top[1] : mask_)->data();
    return stochastic_ ? pick_->data() : nullptr;
  }

  // The seed of one Forward's STOCHASTIC draws, from the context's RNG.
  uint64_t DrawSeed() {
    std::mt19937& rng = ctx_.rng();
    const uint64_t high = rng();
    return (high << 32) | rng();
  }

  // MAX (argmaxes into `mask`) or AVE with Cortado's loops, OpenMP over the planes, on storage type T.
  template <typename T>
  void ForwardLoops(int64_t planes, const T* x, T* y, float* mask) const {
    const int64_t in_plane = static_cast<int64_t>(height_) * width_, out_plane = static_cast<int64_t>(out_h_) * out_w_;
#pragma omp parallel for schedule(static) if (planes * out_plane >= 16384)
    for (int64_t c = 0; c < planes; ++c) {
      const T* in = x + c * in_plane;
      T* out = y + c * out_plane;
      if (!max_) {
        AvePlane(in, out);
      } else if (kernel_h_ == 2 && kernel_w_ == 2) {
        MaxPlane<2>(in, out, mask + c * out_plane);
      } else if (kernel_h_ == 3 && kernel_w_ == 3) {
        MaxPlane<3>(in, out, mask + c * out_plane);
      } else {
        MaxPlane<0>(in, out, mask + c * out_plane);
      }
    }
  }

  // dx = the gradient through the argmaxes or samples in `mask`, or AVE's (mask null), on storage type
  // T: summed in float, for float storage in dx itself, for 16-bit in `sums` (threads_ planes of float,
  // one per thread), each element then rounded once.
  template <typename T>
  void BackwardLoops(int64_t planes, const T* dy, const float* mask, T* dx, float* sums) const {
    const int64_t in_plane = static_cast<int64_t>(height_) * width_, out_plane = static_cast<int64_t>(out_h_) * out_w_;
    const int threads = std::is_same_v<T, float> ? omp_get_max_threads() : std::min(threads_, omp_get_max_threads());
#pragma omp parallel for schedule(static) num_threads(threads) if (planes * in_plane >= 16384)
    for (int64_t c = 0; c < planes; ++c) {
      const T* g = dy + c * out_plane;
      float* d;
      if constexpr (std::is_same_v<T, float>) {
        d = dx + c * in_plane;
      } else {
        d = sums + omp_get_thread_num() * in_plane;
      }
      std::fill(d, d + in_plane, 0.0f);
      if (mask) {
        const float* m = mask + c * out_plane;
        for (int64_t q = 0; q < out_plane; ++q)
          if (m[q] >= 0) d[static_cast<int64_t>(m[q])] += ToFloat(g[q]);
      } else {
        AveBackwardPlane(g, d);
      }
      if constexpr (!std::is_same_v<T, float>) {
        for (int64_t i = 0; i < in_plane; ++i) dx[c * in_plane + i] = FromFloat<T>(d[i]);
      }
    }
  }

  // ---- CPU: choosing the engine ---------------------------------------------------------------------
  // Whether oneDNN computes what Caffe does for this layer and shape: float storage (oneDNN's pooling
  // here is float only), MAX without a mask top (oneDNN keeps its argmaxes its own way), AVE when no
  // window reaches past the padded image on the right or bottom (Caffe divides a window cut there by
  // its smaller size, oneDNN by the kernel's).
  bool OneDnnCanRun() const {
    if (type_ != DataType::kFloat || stochastic_ || (max_ && !mask_)) return false;
    return max_ || ((out_h_ - 1) * stride_h_ + kernel_h_ <= height_ + 2 * pad_h_ &&
                    (out_w_ - 1) * stride_w_ + kernel_w_ <= width_ + 2 * pad_w_);
  }

  // Sets onednn_ (null: Cortado's loops) for the current shape: from the prototxt's engine and the CPU
  // engine setting, timing the two when both leave the choice open. `planned`: the memory plan is made,
  // and the engine chosen then stays, within the buffers planned for it. 16-bit storage: Cortado's
  // loops, their backward's float planes in the scratch (as many threads as planned for).
  void ChooseCpuEngine(bool planned) {
    const EngineRule rule = CpuEngineRule(param_.pooling_param(), ctx_.plan_only());
    bool use_onednn = rule != EngineRule::kOwn && OneDnnCanRun();
    bool timed = use_onednn && rule == EngineRule::kTimed;
    if (planned) use_onednn = onednn_ != nullptr, timed = false;
    onednn_.reset();
    if (!planned) threads_ = omp_get_max_threads();
    const int64_t sums = type_ == DataType::kFloat ? 0 : threads_ * static_cast<int64_t>(height_) * width_;
    cpu_scratch_->Reshape(std::vector<int>{static_cast<int>(sums)});
    if (!use_onednn || planes_ == 0) return;
    if (timed && ChooseEngineByTiming(ShapeKey(), Describe(), TimingCandidates()) == 0) return;
    std::string why;
    onednn_ = CreateOneDnnPooling(Shape(), max_, &why);
    if (!onednn_) {
      CORTADO_REQUIRE(!planned, Describe(), ": oneDNN has no pooling for the new shape (", why, ")");
      LOG(INFO) << Describe() << ": oneDNN has no pooling for this shape (" << why << "): Cortado's";
      return;
    }
    FitOneDnnBuffers(Describe(), planned, OneDnnPoolingScratchBytes(*onednn_), *cpu_scratch_,
                     OneDnnPoolingWorkspaceBytes(*onednn_), mask_, mask_ ? static_cast<int>(mask_->count()) : 0);
  }

  std::string ShapeKey() const {
    std::ostringstream s;
    s << "Pooling:" << (max_ ? "max," : "ave,") << planes_ << ',' << height_ << ',' << width_ << ','
      << kernel_h_ << ',' << kernel_w_ << ',' << pad_h_ << ',' << pad_w_ << ',' << stride_h_ << ',' << stride_w_
      << ',' << out_h_ << ',' << out_w_;
    return s.str();
  }

  // Cortado's loops, oneDNN (ChooseEngineByTiming's indices 0, 1): forward and backward on buffers of their
  // own (set-up time, before the memory plan).
  std::vector<EngineCandidate> TimingCandidates() const {
    const PoolShape s = Shape();
    const auto buffers = [s] {
      std::vector<std::vector<float>> b{std::vector<float>(s.planes * s.height * s.width),
                                        std::vector<float>(s.planes * s.out_h * s.out_w)};
      FillForTiming(&b[0]);
      FillForTiming(&b[1]);
      return b;
    };
    return {{"caffe",
             [this, s, buffers](std::string*) {
               auto b = buffers();
               std::vector<float> y(b[1].size()), mask(max_ ? b[1].size() : 0), dx(b[0].size());
               return BestMilliseconds([&] {
                 ForwardLoops(s.planes, b[0].data(), y.data(), max_ ? mask.data() : nullptr);
                 BackwardLoops(s.planes, b[1].data(), max_ ? mask.data() : nullptr, dx.data(), nullptr);
               });
             }},
            {"onednn", [this, s, buffers](std::string* why) {
               const OneDnnPoolingPtr pool = CreateOneDnnPooling(s, max_, why);
               if (!pool) return -1.0;
               auto b = buffers();
               std::vector<float> y(b[1].size()), dx(b[0].size()),
                   workspace(FloatsFor(OneDnnPoolingWorkspaceBytes(*pool))), scratch(FloatsFor(OneDnnPoolingScratchBytes(*pool)));
               return BestMilliseconds([&] {
                 OneDnnPoolingForward(*pool, b[0].data(), y.data(), workspace.data(), scratch.data());
                 OneDnnPoolingBackward(*pool, b[1].data(), dx.data(), workspace.data(), scratch.data());
               });
             }}};
  }

  // STOCHASTIC forward on every plane: TRAIN samples (pick_ holds the indices), TEST weights by the
  // activations (pick_ holds the window sums). Output k's draw is StochasticPoolUniform(seed, k).
  void StochasticForward(int64_t planes, const float* x, float* y) {
    const bool train = phase() == TRAIN;
    const uint64_t seed = train ? DrawSeed() : 0;
    float* pick = pick_->data();
    int64_t k = 0;
    for (int64_t c = 0; c < planes; ++c) {
      const float* in = x + c * height_ * width_;
      for (int ph = 0; ph < out_h_; ++ph) {
        int h0, h1, w0, w1;
        PoolWindow(ph, stride_h_, pad_h_, kernel_h_, height_, &h0, &h1);
        for (int pw = 0; pw < out_w_; ++pw, ++k) {
          PoolWindow(pw, stride_w_, pad_w_, kernel_w_, width_, &w0, &w1);
          if (h0 >= h1 || w0 >= w1) {
            y[k] = 0.0f;
            pick[k] = train ? -1.0f : 0.0f;
          } else if (train) {
            pick[k] = static_cast<float>(
                StochasticPoolPick(in, width_, h0, h1, w0, w1, StochasticPoolUniform(seed, k), &y[k]));
          } else {
            y[k] = StochasticPoolTestValue(in, width_, h0, h1, w0, w1, &pick[k]);
          }
        }
      }
    }
  }

  // TEST's gradient: dx += dy·(2x − y) / Σx over each window with Σx > 0 (pick_ holds the sums).
  void StochasticTestBackward(int64_t planes, const float* x, const float* y, const float* dy, float* dx) const {
    const float* sum = pick_->data();
    int64_t k = 0;
    for (int64_t c = 0; c < planes; ++c) {
      const int64_t base = c * height_ * width_;
      for (int ph = 0; ph < out_h_; ++ph) {
        int h0, h1, w0, w1;
        PoolWindow(ph, stride_h_, pad_h_, kernel_h_, height_, &h0, &h1);
        for (int pw = 0; pw < out_w_; ++pw, ++k) {
          if (!(sum[k] > 0.0f)) continue;
          PoolWindow(pw, stride_w_, pad_w_, kernel_w_, width_, &w0, &w1);
          for (int h = h0; h < h1; ++h)
            for (int w = w0; w < w1; ++w) {
              const int64_t i = base + h * width_ + w;
              dx[i] += dy[k] * (2.0f * x[i] - y[k]) / sum[k];
            }
        }
      }
    }
  }

  PoolShape Shape() const {
    return {planes_,  height_,   width_,   out_h_,    out_w_,    kernel_h_, kernel_w_,
            pad_h_,   pad_w_,    stride_h_, stride_w_, channels_, nhwc_};
  }

  int OutputSize(const char* axis, int size, int kernel, int pad, int stride) const {
    const float span = static_cast<float>(size + 2 * pad - kernel) / stride;
    const bool ceil_mode = param_.pooling_param().round_mode() == PoolingParameter::CEIL;
    int out = static_cast<int>(ceil_mode ? std::ceil(span) : std::floor(span)) + 1;
    // With padding, the last window must start inside the image or its left/top padding.
    if (pad > 0 && (out - 1) * stride >= size + pad) --out;
    CORTADO_REQUIRE(out >= 1, Describe(), ": the kernel ", axis, " ", kernel,
                    " is larger than the padded input ", axis, " ", size + 2 * pad, " (", size,
                    " + 2·pad ", pad, ")");
    return out;
  }

  // One NCHW plane of the CPU's, for pooling_math.hpp's window functions.
  template <typename T>
  PoolPlane<T> Plane(const T* in) const {
    return {in, width_, 1};
  }

  // The window of output row/column o along one axis: [*lo, *hi) clipped to the image; the
  // return value is the window's length clipped to the padded image (AVE's divisor).
  // kK > 0: the kernel is kK × kK, and windows that lie wholly inside the image (all but a border)
  // run in a separate loop of fixed-length windows without clipping; kK = 0: any kernel.
  template <int kK, typename T>
  void MaxPlane(const T* in, T* out, float* mask) const {
    const int out_w = out_w_, width = width_, stride_w = stride_w_, pad_w = pad_w_;
    // Output columns [inner_lo, inner_hi) have windows wholly inside the image's columns.
    const int last_start = width + pad_w - kernel_w_;  // a whole window starts at pw·stride_w ≤ this
    const int inner_lo = kK > 0 ? std::min(out_w, (pad_w + stride_w - 1) / stride_w) : out_w;
    const int inner_hi = last_start < 0 ? inner_lo : std::max(inner_lo, std::min(out_w, last_start / stride_w + 1));
    for (int ph = 0; ph < out_h_; ++ph, out += out_w, mask += out_w) {
      int h0, h1;
      PoolWindow(ph, stride_h_, pad_h_, kernel_h_, height_, &h0, &h1);
      if (kK > 0 && h1 - h0 == kK) {
        MaxClipped(in, h0, h1, 0, inner_lo, out, mask);
        for (int pw = inner_lo; pw < inner_hi; ++pw) {
          float best;
          int arg;
          MaxOfWindow(Plane(in), h0, kK, pw * stride_w - pad_w, kK, &best, &arg);
          out[pw] = FromFloat<T>(best);
          mask[pw] = static_cast<float>(arg);
        }
        MaxClipped(in, h0, h1, inner_hi, out_w, out, mask);
      } else {
        MaxClipped(in, h0, h1, 0, out_w, out, mask);
      }
    }
  }

  // Output columns [pw_lo, pw_hi) of one output row whose windows span image rows [h0, h1).
  template <typename T>
  void MaxClipped(const T* in, int h0, int h1, int pw_lo, int pw_hi, T* out, float* mask) const {
    for (int pw = pw_lo; pw < pw_hi; ++pw) {
      int w0, w1, arg = -1;
      PoolWindow(pw, stride_w_, pad_w_, kernel_w_, width_, &w0, &w1);
      float best = 0.0f;
      if (h0 < h1 && w0 < w1) MaxOfWindow(Plane(in), h0, h1 - h0, w0, w1 - w0, &best, &arg);
      out[pw] = FromFloat<T>(best);
      mask[pw] = static_cast<float>(arg);
    }
  }

  template <typename T>
  void AvePlane(const T* in, T* out) const {
    for (int ph = 0; ph < out_h_; ++ph) {
      int h0, h1, w0, w1;
      const int size_h = PoolWindow(ph, stride_h_, pad_h_, kernel_h_, height_, &h0, &h1);
      for (int pw = 0; pw < out_w_; ++pw) {
        const int size_w = PoolWindow(pw, stride_w_, pad_w_, kernel_w_, width_, &w0, &w1);
        out[ph * out_w_ + pw] = FromFloat<T>(AverageOfWindow(Plane(in), h0, h1, w0, w1, size_h, size_w));
      }
    }
  }

  // dx (float sums) += each output's dy / its window's size over the window.
  template <typename T>
  void AveBackwardPlane(const T* dy, float* dx) const {
    for (int ph = 0; ph < out_h_; ++ph) {
      int h0, h1, w0, w1;
      const int size_h = PoolWindow(ph, stride_h_, pad_h_, kernel_h_, height_, &h0, &h1);
      for (int pw = 0; pw < out_w_; ++pw) {
        const int size_w = PoolWindow(pw, stride_w_, pad_w_, kernel_w_, width_, &w0, &w1);
        const float g = ToFloat(dy[ph * out_w_ + pw]) / static_cast<float>(size_h * size_w);
        for (int h = h0; h < h1; ++h)
          for (int w = w0; w < w1; ++w) dx[h * width_ + w] += g;
      }
    }
  }

  bool max_ = true, stochastic_ = false, global_ = false;
  DataType type_ = DataType::kFloat;  // x's, y's and their gradients' storage type
  bool nhwc_ = false;                 // x and y channels-last (the GPU only)
  int seed_slot_ = -1;  // GPU, STOCHASTIC, TRAIN: the seed's StepInputs slot (PrepareStep draws it)
  int kernel_h_ = 0, kernel_w_ = 0, pad_h_ = 0, pad_w_ = 0, stride_h_ = 1, stride_w_ = 1;
  int height_ = 0, width_ = 0, out_h_ = 0, out_w_ = 0;
  int64_t planes_ = 0;  // num · channels
  int channels_ = 0;
  int threads_ = 1;  // CPU, 16-bit storage: BackwardLoops' threads at most (its float planes in cpu_scratch_)
  Blob* mask_ = nullptr;  // argmax when there is no mask top (MAX only); oneDNN's workspace with its engine
  OneDnnPoolingPtr onednn_{nullptr, nullptr};  // CPU, oneDNN engine: the primitives for this shape
  Blob* cpu_scratch_ = nullptr;  // CPU, a workspace: oneDNN's scratchpad, or 16-bit BackwardLoops' float planes
  Blob* pick_ = nullptr;  // STOCHASTIC: TRAIN the sampled indices, TEST the window sums
};

CORTADO_REGISTER_LAYER(Pooling, PoolingLayer);

namespace {

// MAX and AVE with one top: what runs on 16-bit storage and channels-last (the argmax top and
// STOCHASTIC are float and NCHW).
bool MaxOrAveWithOneTop(const LayerParameter& layer) {
  const PoolingParameter::PoolMethod pool = layer.pooling_param().pool();
  return (pool == PoolingParameter::MAX || pool == PoolingParameter::AVE) && layer.top_size() == 1;
}

}  // namespace

// On the CPU, where oneDNN may pool (its float code, fed by Casts, is faster than Cortado's loops on
// 16-bit storage: GoogLeNet's bf16 step took 10% longer with the loops), only float.
bool PoolingComputesOn(const LayerParameter& layer, Type type, Device device) {
  if (type == FLOAT) return true;
  if (device == Device::kCPU && OneDnnEnabled() && CpuEngineRule(layer.pooling_param(), false) != EngineRule::kOwn)
    return false;
  return (type == BFLOAT16 || type == FLOAT16) && MaxOrAveWithOneTop(layer);
}

bool PoolingRunsChannelsLast(const LayerParameter& layer, Device device) {
  return device == Device::kGPU && MaxOrAveWithOneTop(layer);
}

}  // namespace cortado
