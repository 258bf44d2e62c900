// batch_norm_chain.cpp — BatchNorm → [Scale] → [ReLU | Sigmoid] run as one layer (fusion.hpp), with the
// arithmetic of batch_norm_chain_math.hpp on either device. A BatchNorm with scale_bias (NVIDIA Caffe's)
// holds Scale's γ and β itself: its chain reads them from the BatchNorm's blobs 3 and 4, and such a
// BatchNorm runs alone as this chain too (batch_norm.hpp), x̂ in its own buffer.
//
// Passes over memory, batch statistics (what ResNet trains with), against the layers one by one:
//   forward:  one statistics pass (Σx, Σx²), x̂ written, y written — instead of BatchNorm's two
//             statistics passes and its normalise, Scale's pass and ReLU's;
//   backward: one sums pass (Σdz, Σdz·x̂, which are also Scale's dβ and dγ) and one dx pass — instead of
//             ReLU's pass, Scale's two sums and its dx, and BatchNorm's sums and its dx.
// With nothing to run backward and x̂ not kept, forward is one pass from x to y. On the CPU a batch's
// channel is finished whole while it is in cache (its sums, then its x̂ and y, or its dx), the channels
// split over the threads.
// The mean and std go where BatchNorm keeps them (its statistics), the running sums into its blobs, and
// the Scale gradients into Scale's blobs (or the scale_bias BatchNorm's), so the chain's layers can take
// over any pass.
// Storage: x, y, x̂ and their gradients are float or 16-bit (bf16 or fp16, one type for all: the Net
// fuses a chain only over blobs of one type, and a scale_bias BatchNorm keeps x̂ in its bottom's type),
// read as float, each output its float result rounded once. Where x̂ is kept, y is computed from x̂ as
// stored (as the layers one by one compute it), else from x̂ in float. The statistics, γ, β and their
// gradients stay float, and the sums run in double as for float.
#include <glog/logging.h>

#include <array>
#include <type_traits>

#include "batch_norm.hpp"
#include "batch_norm_chain_math.hpp"
#include "fusion.hpp"

namespace cortado {

namespace {

using batch_norm_chain::Act;
using batch_norm_chain::Activation;
template <Activation A>
using ActivationTag = std::integral_constant<Activation, A>;

class BatchNormChainLayer : public EitherDevice<Layer> {
 public:
  // γ is blob gamma_index of `affine` and β its blob beta_index (−1: none); a null `affine`: neither.
  BatchNormChainLayer(const LayerParameter& param, Context& ctx, BatchNormLayer& bn, Layer* affine, int gamma_index,
                      int beta_index, Activation kind, float slope)
      : EitherDevice(param, ctx),
        bn_(bn),
        affine_(affine),
        gamma_index_(gamma_index),
        bias_index_(affine != nullptr ? beta_index : -1),
        kind_(kind),
        slope_(slope) {}
  const char* type() const override { return "BatchNormChain"; }
  void Reshape(const BlobVec&, const BlobVec&) override {}  // the chain's layers are shaped

 protected:
  // bottom: x; top: x̂'s blob (BatchNorm's top), y's blob (the chain's last top).
  void Forward_any(const BlobVec& bottom, const BlobVec& top) override {
    Dispatch(bottom[0]->data_type(), [&](auto zero, auto a) {
      Forward<decltype(a)::value, decltype(zero)>(bottom, top);
    });
  }
  void Backward_any(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override {
    Dispatch(bottom[0]->diff_type(), [&](auto zero, auto a) {
      Backward<decltype(a)::value, decltype(zero)>(top, propagate_down, bottom);
    });
  }

 private:
  // f(T{}, ActivationTag<A>{}) for the storage type T that `type` names and this chain's activation A.
  template <typename F>
  void Dispatch(DataType type, F f) const {
    VisitStorageType(type, [&](auto zero) {
      switch (kind_) {
        case Activation::kReLU: return f(zero, ActivationTag<Activation::kReLU>{});
        case Activation::kSigmoid: return f(zero, ActivationTag<Activation::kSigmoid>{});
        default: return f(zero, ActivationTag<Activation::kNone>{});
      }
    });
  }

  template <Activation A, typename T>
  void Forward(const BlobVec& bottom, const BlobVec& top) {
    const ChannelLayout l = bn_.Layout();
    const T* x = bottom[0]->data_as<T>();
    float* mean = bn_.statistics()->data();
    float* std = mean + l.channels;
    float* running_mean = bn_.blobs()[0]->data();
    float* running_var = bn_.blobs()[1]->data();
    float* factor = bn_.blobs()[2]->data();
    const batch_norm_chain::ScaleShiftAct<A> rest{Gamma(), Beta(), Act<A>{slope_}};
    if (bn_.global()) {
      Map(ctx_, l.channels, batch_norm::GlobalMean{factor}, mean, running_mean);
      Map(ctx_, l.channels, batch_norm::GlobalStd{factor, bn_.eps()}, std, running_var);
    } else {
      const int64_t m = l.num * l.spatial;
      const float correction = m > 1 ? static_cast<float>(m) / static_cast<float>(m - 1) : 1.0f;
      const batch_norm_chain::SumAndSquares term{x};
      const batch_norm_chain::StoreBatchStats store{static_cast<double>(m), bn_.eps(), bn_.moving_average_fraction(),
                                                    correction, mean, std, running_mean, running_var, factor};
      if (ctx_.device() == Device::kCPU && top[0] != top[1]) {  // each channel whole while it is in cache
        T* x_norm = top[0]->data_as<T>();
        T* y = top[1]->data_as<T>();
        const batch_norm::Normalize normalize{mean, std};
        batch_norm::ForEachChannel(l, [&](int64_t c) {
          store(c, BothSums(l, c, term).data());
          batch_norm::ForChannel(l, c, [&](int64_t i) {  // as the two MapChannels below
            const T stored = FromFloat<T>(normalize(c, ToFloat(x[i])));
            x_norm[i] = stored;
            y[i] = FromFloat<T>(rest(c, ToFloat(stored)));
          });
        });
        return;
      }
      ChannelSums(ctx_, l, Partials(), term, store);
    }
    if (top[0] == top[1]) {  // x̂ is not kept
      MapChannels(ctx_, l, batch_norm_chain::NormalizeScaleShiftAct<A>{mean, std, rest}, top[1]->data_as<T>(), x);
      return;
    }
    MapChannels(ctx_, l, batch_norm::Normalize{mean, std}, top[0]->data_as<T>(), x);
    MapChannels(ctx_, l, rest, top[1]->data_as<T>(), top[0]->data_as<T>());
  }

  template <Activation A, typename T>
  void Backward(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) {
    const ChannelLayout l = bn_.Layout();
    const Act<A> act{slope_};
    const T* dy = top[1]->diff_as<T>();
    const T* y = top[1]->data_as<T>();
    const T* x_norm = top[0]->data_as<T>();
    const float* std = bn_.statistics()->data() + l.channels;
    float* means = bn_.statistics()->data() + 2 * l.channels;
    float* gamma_diff =
        affine_ != nullptr && affine_->param_propagate_down(gamma_index_) ? affine_->blobs()[gamma_index_]->diff() : nullptr;
    float* beta_diff =
        bias_index_ >= 0 && affine_->param_propagate_down(bias_index_) ? affine_->blobs()[bias_index_]->diff() : nullptr;
    const bool dx_wanted = propagate_down[0];
    const batch_norm_chain::GradientSums term{dy, y, x_norm, act};
    const batch_norm_chain::StoreGradients store{static_cast<double>(l.num * l.spatial), l.channels, Gamma(), means,
                                                 gamma_diff, beta_diff};
    T* dx = bottom[0]->diff_as<T>();
    if (ctx_.device() == Device::kCPU && dx_wanted && !bn_.global()) {  // each channel whole while in cache
      const batch_norm_chain::BatchBackward<A> backward{Gamma(), std, means, l.channels, act};
      batch_norm::ForEachChannel(l, [&](int64_t c) {
        store(c, BothSums(l, c, term).data());
        batch_norm::ForChannel(l, c, [&](int64_t i) {  // as MapChannels would
          dx[i] = FromFloat<T>(backward(c, ToFloat(dy[i]), ToFloat(y[i]), ToFloat(x_norm[i])));
        });
      });
      return;
    }
    // The sums serve dγ and dβ, and in batch mode dx's means.
    if (gamma_diff != nullptr || beta_diff != nullptr || (dx_wanted && !bn_.global()))
      ChannelSums(ctx_, l, Partials(), term, store);
    if (!dx_wanted) return;
    if (bn_.global()) {
      MapChannels(ctx_, l, batch_norm_chain::GlobalBackward<A>{Gamma(), std, act}, dx, dy, y);
    } else {
      MapChannels(ctx_, l, batch_norm_chain::BatchBackward<A>{Gamma(), std, means, l.channels, act}, dx, dy, y, x_norm);
    }
  }

  // A two-sum term's totals over channel c in one pass (the CPU's order of ChannelSumCpu: each image's
  // stretch in vector lanes, the stretches added in order).
  template <typename Term>
  static std::array<double, 2> BothSums(ChannelLayout l, int64_t c, const Term& term) {
    static_assert(Term::kSums == 2, "a term of two sums");
    std::array<double, 2> total{};
    for (int64_t n = 0; n < l.num; ++n) {
      const int64_t base = (n * l.channels + c) * l.spatial;
      double first = 0, second = 0;
#pragma omp simd reduction(+ : first, second)
      for (int64_t q = 0; q < l.spatial; ++q) {
        double sums[2] = {};
        term(base + q, c, sums);
        first += sums[0];
        second += sums[1];
      }
      total[0] += first;
      total[1] += second;
    }
    return total;
  }
  const float* Gamma() const { return affine_ != nullptr ? affine_->blobs()[gamma_index_]->data() : nullptr; }
  const float* Beta() const { return bias_index_ >= 0 ? affine_->blobs()[bias_index_]->data() : nullptr; }
  float* Partials() const { return bn_.partials() != nullptr ? bn_.partials()->data() : nullptr; }

  BatchNormLayer& bn_;
  Layer* affine_;        // whose blobs hold γ and β: the Scale, or the BatchNorm with scale_bias; null: γ = 1, β = 0
  int gamma_index_;      // γ's blob in affine_
  int bias_index_;       // β's blob in affine_, or −1
  Activation kind_;
  float slope_;  // ReLU's negative_slope
};

}  // namespace

std::unique_ptr<Layer> MakeBatchNormChain(Context& ctx, Layer& batch_norm, Layer* scale, Layer* activation) {
  auto* bn = dynamic_cast<BatchNormLayer*>(&batch_norm);
  CHECK(bn != nullptr && (scale != nullptr || activation != nullptr || bn->scale_bias()))
      << "MakeBatchNormChain: not a chain";
  CHECK(scale == nullptr || !bn->scale_bias()) << "MakeBatchNormChain: a Scale after a BatchNorm with scale_bias";
  Layer* affine = scale;
  int gamma_index = 0, beta_index = -1;
  if (scale != nullptr) beta_index = scale->layer_param().scale_param().bias_term() ? 1 : -1;
  if (bn->scale_bias()) {
    affine = bn;
    gamma_index = BatchNormLayer::kScaleBlob;
    beta_index = BatchNormLayer::kBiasBlob;
  }
  Activation kind = Activation::kNone;
  float slope = 0.0f;
  if (activation != nullptr) {
    const std::string type = activation->type();
    CHECK(type == "ReLU" || type == "Sigmoid") << "MakeBatchNormChain: activation " << type;
    kind = type == "ReLU" ? Activation::kReLU : Activation::kSigmoid;
    slope = type == "ReLU" ? activation->layer_param().relu_param().negative_slope() : 0.0f;
    CHECK(slope >= 0.0f) << "MakeBatchNormChain: a ReLU with a negative slope";
  }
  LayerParameter param;
  std::string name = batch_norm.name();
  if (scale != nullptr) name += "+" + scale->name();
  if (activation != nullptr) name += "+" + activation->name();
  param.set_name(name);
  param.set_type("BatchNormChain");
  param.set_phase(batch_norm.phase());
  return std::make_unique<BatchNormChainLayer>(param, ctx, *bn, affine, gamma_index, beta_index, kind, slope);
}

Blob* ScaleBiasXNorm(Layer& layer) {
  auto* bn = dynamic_cast<BatchNormLayer*>(&layer);
  return bn != nullptr ? bn->x_norm() : nullptr;
}

}  // namespace cortado
