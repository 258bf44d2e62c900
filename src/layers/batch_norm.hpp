// batch_norm.hpp — the BatchNorm layer's class (batch_norm.cpp says what it computes), declared here so
// that the fused BatchNorm chain (batch_norm_chain.cpp) can share its statistics: the chain writes the
// mean and std where this layer keeps them, so a pass may run the chain fused or layer by layer. With
// scale_bias the layer runs as a chain of its own (fusion.hpp), its γ and β in Scale's place. Either
// way the layer runs over float or 16-bit storage (bf16, fp16: its blobs' type), with float statistics.
#pragma once

#include <cmath>
#include <memory>

#include "batch_norm_math.hpp"
#include "cortado/error.hpp"
#include "cortado/filler.hpp"
#include "cortado/kernels/channel_sums.hpp"  // ChannelSumScratchFloats
#include "cortado/layer.hpp"
#include "fusion.hpp"

namespace cortado {

namespace batch_norm {

// The CPU's per-channel loops of BatchNorm and of its fused chain (batch_norm_chain.cpp), which finish
// each channel while it is in cache. visit(c) for every channel, split over the threads when the blob
// is large enough to split (not LeNet's smallest).
template <typename Visit>
void ForEachChannel(ChannelLayout l, Visit visit) {
  if (l.count() >= kCpuParallelElements) {
#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < l.channels; ++c) visit(c);
  } else {
    for (int64_t c = 0; c < l.channels; ++c) visit(c);
  }
}

// visit(i) for every element i of channel c, in increasing order.
template <typename Visit>
void ForChannel(ChannelLayout l, int64_t c, Visit visit) {
  for (int64_t n = 0; n < l.num; ++n) {
    const int64_t base = (n * l.channels + c) * l.spatial;
#pragma omp simd
    for (int64_t q = 0; q < l.spatial; ++q) visit(base + q);
  }
}

}  // namespace batch_norm

class BatchNormLayer : public EitherDevice<Layer> {
 public:
  using EitherDevice::EitherDevice;
  const char* type() const override { return "BatchNorm"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }
  // γ and β's blobs with scale_bias (NVIDIA Caffe's order: after the three statistics).
  static constexpr int kScaleBlob = 3, kBiasBlob = 4;

  bool BackwardReadsBottomData(int) const override { return false; }
  // x̂ = y without scale_bias; with it, x̂ is kept in a buffer of its own.
  bool BackwardReadsTopData(int) const override { return !global_ && !scale_bias_; }
  bool InPlaceSafe() const override { return true; }

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override {
    const BatchNormParameter& p = param_.batch_norm_param();
    global_ = p.has_use_global_stats() ? p.use_global_stats() : phase() == TEST;
    maf_ = p.moving_average_fraction();
    eps_ = p.eps();
    scale_bias_ = p.scale_bias() || p.has_scale_filler() || p.has_bias_filler();  // a filler implies it (NVIDIA)
    CORTADO_REQUIRE(bottom[0]->num_axes() >= 1, Describe(), ": the bottom needs at least one axis");
    channels_ = bottom[0]->num_axes() == 1 ? 1 : bottom[0]->shape(1);
    blobs_.push_back(std::make_shared<Blob>(std::vector<int>{channels_}));
    blobs_.push_back(std::make_shared<Blob>(std::vector<int>{channels_}));
    blobs_.push_back(std::make_shared<Blob>(std::vector<int>{1}));
    if (scale_bias_) {
      blobs_.push_back(std::make_shared<Blob>(std::vector<int>{channels_}));  // γ
      blobs_.push_back(std::make_shared<Blob>(std::vector<int>{channels_}));  // β
    }
    // The statistics are not learned: lr_mult 0 for each blob.
    for (int i = 0; i < 3; ++i) {
      if (i == param_.param_size()) {
        param_.add_param()->set_lr_mult(0.0f);
      } else {
        CORTADO_REQUIRE(param_.param(i).lr_mult() == 0.0f, Describe(), ": param ", i, " has lr_mult ",
                        param_.param(i).lr_mult(), "; BatchNorm's blobs are running statistics, not learned "
                        "parameters: give lr_mult: 0 or no param at all");
      }
    }
    // γ and β learn: lr_mult 1, decay_mult 1 where the prototxt gives no param entry for them.
    for (int i = kScaleBlob; scale_bias_ && i <= kBiasBlob; ++i) {
      if (i != param_.param_size()) continue;
      ParamSpec* spec = param_.add_param();
      spec->set_lr_mult(1.0f);
      spec->set_decay_mult(1.0f);
    }
    stats_ = AddStepScratch();
    if (ctx_.device() == Device::kGPU) partials_ = AddWorkspace();
    if (scale_bias_) {
      x_norm_ = AddStepScratch();
      chain_ = MakeBatchNormChain(ctx_, *this, nullptr, nullptr);
    }
  }

  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    const Blob& x = *bottom[0];
    const int channels = x.num_axes() == 1 ? 1 : x.shape(1);
    CORTADO_REQUIRE(channels == channels_, Describe(), ": the bottom ", x.shape_string(), " has ", channels,
                    " channels, but the layer was set up for ", channels_);
    num_ = x.shape(0);
    spatial_ = num_ == 0 ? 0 : x.count() / (static_cast<int64_t>(num_) * channels_);
    channels_last_ = x.channels_last();
    if (top[0] != bottom[0]) top[0]->ReshapeLike(x);
    stats_->Reshape(std::vector<int>{4, channels_});  // mean, std, mean(dy), mean(dy·x̂)
    const ChannelLayout l = Layout();
    if (partials_) partials_->Reshape(std::vector<int>{ChannelSumScratchFloats(l.num, l.channels, l.spatial, 2)});
    if (x_norm_) {
      x_norm_->ReshapeLike(x);
      x_norm_->set_types(x.data_type(), x.diff_type());  // x̂ in x's storage, as the chain writes it
    }
  }

  void InitParams() override {
    for (int i = 0; i < 3; ++i) blobs_[i]->WriteData(std::vector<float>(static_cast<size_t>(blobs_[i]->count()), 0.0f));
    if (!scale_bias_) return;
    const BatchNormParameter& p = param_.batch_norm_param();
    FillerParameter scale = p.scale_filler();
    if (!p.has_scale_filler()) scale.set_value(1.0f);  // constant 1
    FillBlob(scale, blobs_[kScaleBlob].get(), ctx_.rng());
    FillBlob(p.bias_filler(), blobs_[kBiasBlob].get(), ctx_.rng());  // constant 0 unless given
  }

  // Whether x̂ must be kept for a backward pass (scale_bias: the Net says; outside a Net, always).
  void OnMemoryBound(const BlobVec&, const BlobVec&, const BoundPasses& passes) override {
    keep_x_norm_ = passes.backward;
  }

  // ---- what the fused chain shares (batch_norm_chain.cpp) ----
  bool global() const { return global_; }
  float eps() const { return eps_; }
  float moving_average_fraction() const { return maf_; }
  // (4, C): the mean, the std, and Backward's mean(dy) and mean(dy·x̂), per channel.
  Blob* statistics() const { return stats_; }
  Blob* partials() const { return partials_; }  // GPU: the channel sums' partials, for 2 sums; else null
  // An NHWC blob is N·H·W planes of C channels of one element each (channels_last.hpp).
  ChannelLayout Layout() const {
    return channels_last_ ? ChannelLayout{num_ * spatial_, channels_, 1} : ChannelLayout{num_, channels_, spatial_};
  }
  bool scale_bias() const { return scale_bias_; }
  Blob* x_norm() const { return x_norm_; }  // scale_bias: where x̂ is kept for Backward; else null

 protected:
  void Forward_any(const BlobVec& bottom, const BlobVec& top) override {
    if (chain_) {  // scale_bias: the chain BatchNorm → its own γ, β
      chain_->Forward(bottom, {keep_x_norm_ ? x_norm_ : top[0], top[0]});
      return;
    }
    VisitStorageType(bottom[0]->data_type(), [&](auto zero) { ForwardOn<decltype(zero)>(*bottom[0], *top[0]); });
  }

  void Backward_any(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override {
    if (chain_) {  // dγ and dβ (where they learn), and dx through γ
      chain_->Backward({x_norm_, top[0]}, propagate_down, bottom);
      return;
    }
    if (!propagate_down[0]) return;
    VisitStorageType(bottom[0]->data_type(), [&](auto zero) { BackwardOn<decltype(zero)>(*top[0], *bottom[0]); });
  }

 private:
  // Forward and Backward without scale_bias, over x, y, dy and dx of storage type T (float, or 16-bit
  // where the net's plan gives this layer bf16 or fp16 blobs): values read as float, the statistics and
  // sums as for float, each output rounded once to T.
  template <typename T>
  void ForwardOn(const Blob& bottom, Blob& top) {
    const T* x = bottom.data_as<T>();
    float* mean = stats_->data();
    float* std = mean + channels_;
    if (global_) {
      const float* weight = blobs_[2]->data();
      Map(ctx_, channels_, batch_norm::GlobalMean{weight}, mean, blobs_[0]->data());
      Map(ctx_, channels_, batch_norm::GlobalStd{weight, eps_}, std, blobs_[1]->data());
    } else {
      const int64_t m = static_cast<int64_t>(num_) * spatial_;
      const float correction = m > 1 ? static_cast<float>(m) / static_cast<float>(m - 1) : 1.0f;
      const batch_norm::StoreMean store_mean{static_cast<double>(m), mean};
      const batch_norm::StoreStats store_stats{static_cast<double>(m), eps_, maf_, correction, mean, std,
                                               blobs_[0]->data(), blobs_[1]->data(), blobs_[2]->data()};
      if (ctx_.device() == Device::kGPU) {
        ChannelSums(ctx_, Layout(), partials_->data(), SumOfValues{x}, store_mean);
        ChannelSums(ctx_, Layout(), partials_->data(), batch_norm::SumOfSquares{x, mean}, store_stats);
      } else {  // each channel's two sums while it is in cache
        batch_norm::ForEachChannel(Layout(), [&](int64_t c) {
          double total = ChannelSumCpu<0>(Layout(), c, SumOfValues{x});
          store_mean(c, &total);
          total = ChannelSumCpu<0>(Layout(), c, batch_norm::SumOfSquares{x, mean});
          store_stats(c, &total);
        });
      }
    }
    MapChannels(ctx_, Layout(), batch_norm::Normalize{mean, std}, top.data_as<T>(), x);
  }

  template <typename T>
  void BackwardOn(const Blob& top, Blob& bottom) {
    const T* dy = top.diff_as<T>();
    const T* x_norm = top.data_as<T>();  // y = x̂
    const float* std = stats_->data() + channels_;
    float* means = stats_->data() + 2 * channels_;  // mean(dy), then mean(dy·x̂)
    T* dx = bottom.diff_as<T>();  // may be dy (in place): each element is read before it is written
    if (global_) {
      MapChannels(ctx_, Layout(), batch_norm::GlobalBackward{std}, dx, dy);
      return;
    }
    const batch_norm::StoreMeans store{static_cast<double>(num_) * spatial_, channels_, means};
    const batch_norm::Backward backward{std, means, channels_};
    const batch_norm::SumOfDyAndDyX term{dy, x_norm};
    if (ctx_.device() == Device::kGPU) {
      ChannelSums(ctx_, Layout(), partials_->data(), term, store);
      MapChannels(ctx_, Layout(), backward, dx, dy, x_norm);
      return;
    }
    // The CPU finishes each channel while it is in cache: its sums, then its dx (as MapChannels would).
    batch_norm::ForEachChannel(Layout(), [&](int64_t c) {
      const double totals[2] = {ChannelSumCpu<0>(Layout(), c, term), ChannelSumCpu<1>(Layout(), c, term)};
      store(c, totals);
      batch_norm::ForChannel(Layout(), c, [&](int64_t i) {
        dx[i] = FromFloat<T>(backward(c, ToFloat(dy[i]), ToFloat(x_norm[i])));
      });
    });
  }

  bool global_ = false;
  bool scale_bias_ = false;   // γ and β of its own (blobs 3 and 4)
  bool keep_x_norm_ = true;   // scale_bias: Forward writes x̂ into x_norm_ (a backward pass will read it)
  float maf_ = 0.999f, eps_ = 1e-5f;
  int channels_ = 0, num_ = 0;
  int64_t spatial_ = 1;
  bool channels_last_ = false;  // the bottom is NHWC
  Blob* stats_ = nullptr;   // (4, C): mean, std, and Backward's mean(dy), mean(dy·x̂)
  Blob* partials_ = nullptr;  // GPU: the chunked channel sums' partials (a workspace)
  Blob* x_norm_ = nullptr;    // scale_bias: x̂ (in the bottom's storage type), from Forward to Backward
  std::unique_ptr<Layer> chain_;  // scale_bias: batch_norm_chain.cpp's layer over this one's blobs
};

}  // namespace cortado
