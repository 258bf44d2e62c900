// batch_norm_chain.cpp — BatchNorm → [Scale] → [ReLU | Sigmoid] run as one layer (fusion.hpp), with the
// arithmetic of batch_norm_chain_math.hpp on either device.
//
// Passes over memory, batch statistics (what ResNet trains with), against the layers one by one:
//   forward:  one statistics pass (Σx, Σx²), x̂ written, y written — instead of BatchNorm's two
//             statistics passes and its normalise, Scale's pass and ReLU's;
//   backward: one sums pass (Σdz, Σdz·x̂, which are also Scale's dβ and dγ) and one dx pass — instead of
//             ReLU's pass, Scale's two sums and its dx, and BatchNorm's sums and its dx.
// With nothing to run backward and x̂ not kept, forward is one pass from x to y.
// The mean and std go where BatchNorm keeps them (its statistics), the running sums into its blobs, and
// the Scale gradients into Scale's blobs, so the chain's layers can take over any pass.
#include <glog/logging.h>

#include "batch_norm.hpp"
#include "batch_norm_chain_math.hpp"
#include "fusion.hpp"

namespace cortado {

namespace {

using batch_norm_chain::Act;
using batch_norm_chain::Activation;

class BatchNormChainLayer : public EitherDevice<Layer> {
 public:
  BatchNormChainLayer(const LayerParameter& param, Context& ctx, BatchNormLayer& bn, Layer* scale, Act act)
      : EitherDevice(param, ctx), bn_(bn), scale_(scale), act_(act) {
    if (scale_ != nullptr) bias_index_ = scale_->layer_param().scale_param().bias_term() ? 1 : -1;
  }
  const char* type() const override { return "BatchNormChain"; }
  void Reshape(const BlobVec&, const BlobVec&) override {}  // the chain's layers are shaped

 protected:
  // bottom: x; top: x̂'s blob (BatchNorm's top), y's blob (the chain's last top).
  void Forward_any(const BlobVec& bottom, const BlobVec& top) override {
    const ChannelLayout l = bn_.Layout();
    const float* x = bottom[0]->data();
    float* mean = bn_.statistics()->data();
    float* std = mean + l.channels;
    float* running_mean = bn_.blobs()[0]->data();
    float* running_var = bn_.blobs()[1]->data();
    float* factor = bn_.blobs()[2]->data();
    if (bn_.global()) {
      Map(ctx_, l.channels, batch_norm::GlobalMean{factor}, mean, running_mean);
      Map(ctx_, l.channels, batch_norm::GlobalStd{factor, bn_.eps()}, std, running_var);
    } else {
      const int64_t m = l.num * l.spatial;
      const float correction = m > 1 ? static_cast<float>(m) / static_cast<float>(m - 1) : 1.0f;
      ChannelSums(ctx_, l, Partials(), batch_norm_chain::SumAndSquares{x},
                  batch_norm_chain::StoreBatchStats{static_cast<double>(m), bn_.eps(), bn_.moving_average_fraction(),
                                                    correction, mean, std, running_mean, running_var, factor});
    }
    const batch_norm_chain::ScaleShiftAct rest{Gamma(), Beta(), act_};
    if (top[0] == top[1]) {  // x̂ is not kept
      MapChannels(ctx_, l, batch_norm_chain::NormalizeScaleShiftAct{mean, std, rest}, top[1]->data(), x);
      return;
    }
    MapChannels(ctx_, l, batch_norm::Normalize{mean, std}, top[0]->data(), x);
    MapChannels(ctx_, l, rest, top[1]->data(), top[0]->data());
  }

  void Backward_any(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override {
    const ChannelLayout l = bn_.Layout();
    const float* dy = top[1]->diff();
    const float* y = top[1]->data();
    const float* x_norm = top[0]->data();
    const float* std = bn_.statistics()->data() + l.channels;
    float* means = bn_.statistics()->data() + 2 * l.channels;
    float* gamma_diff = scale_ != nullptr && scale_->param_propagate_down(0) ? scale_->blobs()[0]->diff() : nullptr;
    float* beta_diff =
        bias_index_ >= 0 && scale_->param_propagate_down(bias_index_) ? scale_->blobs()[bias_index_]->diff() : nullptr;
    const bool dx_wanted = propagate_down[0];
    // The sums serve dγ and dβ, and in batch mode dx's means.
    if (gamma_diff != nullptr || beta_diff != nullptr || (dx_wanted && !bn_.global()))
      ChannelSums(ctx_, l, Partials(), batch_norm_chain::GradientSums{dy, y, x_norm, act_},
                  batch_norm_chain::StoreGradients{static_cast<double>(l.num * l.spatial), l.channels, Gamma(), means,
                                                   gamma_diff, beta_diff});
    if (!dx_wanted) return;
    float* dx = bottom[0]->diff();
    if (bn_.global()) {
      MapChannels(ctx_, l, batch_norm_chain::GlobalBackward{Gamma(), std, act_}, dx, dy, y);
    } else {
      MapChannels(ctx_, l, batch_norm_chain::BatchBackward{Gamma(), std, means, l.channels, act_}, dx, dy, y, x_norm);
    }
  }

 private:
  const float* Gamma() const { return scale_ != nullptr ? scale_->blobs()[0]->data() : nullptr; }
  const float* Beta() const { return bias_index_ >= 0 ? scale_->blobs()[bias_index_]->data() : nullptr; }
  float* Partials() const { return bn_.partials() != nullptr ? bn_.partials()->data() : nullptr; }

  BatchNormLayer& bn_;
  Layer* scale_;        // null: γ = 1, β = 0
  int bias_index_ = -1;  // β's blob in Scale, or −1
  Act act_;
};

}  // namespace

std::unique_ptr<Layer> MakeBatchNormChain(Context& ctx, Layer& batch_norm, Layer* scale, Layer* activation) {
  auto* bn = dynamic_cast<BatchNormLayer*>(&batch_norm);
  CHECK(bn != nullptr && (scale != nullptr || activation != nullptr)) << "MakeBatchNormChain: not a chain";
  Act act{Activation::kNone, 0.0f};
  if (activation != nullptr) {
    const std::string kind = activation->type();
    CHECK(kind == "ReLU" || kind == "Sigmoid") << "MakeBatchNormChain: activation " << kind;
    act.kind = kind == "ReLU" ? Activation::kReLU : Activation::kSigmoid;
    act.slope = kind == "ReLU" ? activation->layer_param().relu_param().negative_slope() : 0.0f;
    CHECK(act.slope >= 0.0f) << "MakeBatchNormChain: a ReLU with a negative slope";
  }
  LayerParameter param;
  std::string name = batch_norm.name();
  if (scale != nullptr) name += "+" + scale->name();
  if (activation != nullptr) name += "+" + activation->name();
  param.set_name(name);
  param.set_type("BatchNormChain");
  param.set_phase(batch_norm.phase());
  return std::make_unique<BatchNormChainLayer>(param, ctx, *bn, scale, act);
}

}  // namespace cortado
