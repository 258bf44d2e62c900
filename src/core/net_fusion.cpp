// net_fusion.cpp — the chains of layers a Net runs fused (net.hpp, "chains run fused"): finding them
// after set-up, and running layer i of a pass as the chains decide.
//
// A chain qualifies when each layer reads exactly the top the one before it wrote, nothing else reads
// those intermediate versions (Split layers stand wherever a top has several readers), no top of the
// chain carries a loss weight, and what the fused layer writes is what the layers would have written:
//   BatchNorm → [Scale (one bottom, axis 1, one axis)] → [ReLU (slope ≥ 0) | Sigmoid], at least two;
//   after a Scale, the activation runs in place (the Scale's own top is not written by the fused layer);
//   when the chain runs backward, x̂ needs a blob of its own: BatchNorm's top is not the chain's last top,
//   and every layer after the first propagates to its bottom;
//   a BatchNorm with scale_bias (γ and β its own) is the BatchNorm → Scale part: no Scale joins it, the
//   activation after it runs in place, and x̂ is kept in its own buffer (ScaleBiasXNorm);
//   Eltwise SUM of two bottoms → ReLU (slope ≥ 0) in place on the sum.
// Storage: every bottom and top of a chain's layers holds one type, data and diff alike (the chain's
// first bottom's): float, bf16 or fp16, on which both fused layers compute.
// The memory plan (net_memory.cpp) gives every blob a chain's layers use a lifetime over the whole
// chain, so the fused layer may write a later layer's top early, or a bottom's diff late.
#include <glog/logging.h>

#include "../layers/fusion.hpp"
#include "cortado/net.hpp"

namespace cortado {

namespace {

bool IsActivation(const Layer& layer) {
  const std::string type = layer.type();
  return (type == "ReLU" && layer.layer_param().relu_param().negative_slope() >= 0.0f) || type == "Sigmoid";
}

bool IsChannelScale(const Layer& layer, const BlobVec& bottom) {
  if (std::string(layer.type()) != "Scale" || bottom.size() != 1 || bottom[0]->num_axes() < 2) return false;
  const ScaleParameter& p = layer.layer_param().scale_param();
  return p.axis() == 1 && p.num_axes() == 1;
}

bool IsSumOfTwo(const Layer& layer, const BlobVec& bottom) {
  return std::string(layer.type()) == "Eltwise" && bottom.size() == 2 &&
         layer.layer_param().eltwise_param().operation() == EltwiseParameter::SUM;
}

}  // namespace

void Net::FuseChains() {
  const int n = static_cast<int>(layers_.size());
  chain_of_.assign(layers_.size(), -1);
  chains_.clear();
  if (!fuse_) return;
  // Layer k's bottoms and tops all hold `stored`, data and diff alike.
  auto holds = [&](int k, DataType stored) {
    for (const BlobVec* blobs : {&bottom_vecs_[k], &top_vecs_[k]})
      for (const Blob* b : *blobs)
        if (b->data_type() != stored || b->diff_type() != stored) return false;
    return true;
  };
  DataType type = DataType::kFloat;  // the storage of the chain that starts at layer i: its first bottom's
  // Layer k reads (as its only bottom) the top layer k − 1 wrote, that top carries no loss, and its blobs
  // hold the chain's type.
  auto follows = [&](int k) {
    return k < n && holds(k, type) && bottom_id_vecs_[k].size() == 1 && top_id_vecs_[k].size() == 1 &&
           top_id_vecs_[k - 1].size() == 1 && bottom_id_vecs_[k][0] == top_id_vecs_[k - 1][0] &&
           layers_[k - 1]->loss(0) == 0.0f && layers_[k]->loss(0) == 0.0f;
  };
  std::string names;
  auto add = [&](FusedChain chain) {
    for (int k = chain.first; k <= chain.last; ++k) chain_of_[k] = static_cast<int>(chains_.size());
    names += (chains_.empty() ? "" : ", ") + chain.layer->name();
    chains_.push_back(std::move(chain));
  };
  for (int i = 0; i < n; ++i) {
    if (bottom_vecs_[i].empty()) continue;
    type = bottom_vecs_[i][0]->data_type();
    if (!holds(i, type)) continue;
    const bool relu_in_place_next = follows(i + 1) && std::string(layers_[i + 1]->type()) == "ReLU" &&
                                    IsActivation(*layers_[i + 1]) && top_id_vecs_[i + 1][0] == bottom_id_vecs_[i + 1][0];
    if (IsSumOfTwo(*layers_[i], bottom_vecs_[i]) && relu_in_place_next) {
      const bool runs_backward = runs_backward_ && (layer_need_backward_[i] || layer_need_backward_[i + 1]);
      if (runs_backward && !bottom_need_backward_[i + 1][0]) continue;
      FusedChain chain;
      chain.layer = MakeEltwiseReLU(ctx_, *layers_[i], *layers_[i + 1]);
      chain.first = i;
      chain.last = i + 1;
      chain.bottom = bottom_vecs_[i];
      chain.top = top_vecs_[i + 1];
      chain.propagate_down = bottom_need_backward_[i];
      if (!runs_backward) chain.propagate_down.assign(chain.bottom.size(), false);
      chain.runs_backward = runs_backward;
      add(std::move(chain));
      ++i;
      continue;
    }
    if (std::string(layers_[i]->type()) != "BatchNorm" || top_id_vecs_[i].size() != 1) continue;
    int last = i;
    Layer* scale = nullptr;
    Layer* activation = nullptr;
    Blob* own_x_norm = ScaleBiasXNorm(*layers_[i]);  // non-null: the BatchNorm has scale_bias
    if (own_x_norm == nullptr && follows(last + 1) && IsChannelScale(*layers_[last + 1], bottom_vecs_[last + 1]))
      scale = layers_[++last].get();
    const bool in_place_next = last + 1 < n && follows(last + 1) && top_id_vecs_[last + 1][0] == bottom_id_vecs_[last + 1][0];
    const bool scales = scale != nullptr || own_x_norm != nullptr;
    if (follows(last + 1) && IsActivation(*layers_[last + 1]) && (!scales || in_place_next))
      activation = layers_[++last].get();
    if (last == i) continue;
    bool runs_backward = false;
    for (int k = i; k <= last; ++k) runs_backward = runs_backward || (runs_backward_ && layer_need_backward_[k]);
    if (runs_backward) {
      if (own_x_norm == nullptr && top_id_vecs_[i][0] == top_id_vecs_[last][0]) continue;  // x̂ would be overwritten
      bool propagates = true;
      for (int k = i + 1; k <= last; ++k) propagates = propagates && bottom_need_backward_[k][0];
      if (!propagates) continue;
    }
    FusedChain chain;
    chain.layer = MakeBatchNormChain(ctx_, *layers_[i], scale, activation);
    chain.first = i;
    chain.last = last;
    chain.bottom = bottom_vecs_[i];
    chain.top = {top_vecs_[i][0], top_vecs_[last][0]};
    // scale_bias: BatchNorm's top is the chain's last (the activation in place); x̂ goes to its own buffer.
    if (own_x_norm != nullptr && runs_backward) chain.top[0] = own_x_norm;
    chain.propagate_down = {runs_backward && bottom_need_backward_[i][0]};
    chain.runs_backward = runs_backward;
    for (int k = i; k < last; ++k) {
      const int blob = top_id_vecs_[k][0];
      if (blob != top_id_vecs_[last][0] && blob != bottom_id_vecs_[i][0]) chain.inner_blobs.push_back(blob);
    }
    add(std::move(chain));
    i = last;
  }
  if (!chains_.empty())
    LOG(INFO) << source_ << ": " << chains_.size() << " chain(s) of layers run fused, each as one layer "
              << "(fuse: false runs them one by one): " << names;
}

void Net::Unfuse(int chain) {
  FusedChain& c = chains_[chain];
  if (c.layer == nullptr) return;
  LOG(INFO) << source_ << ": " << c.layer->name() << " runs layer by layer: one of its intermediate blobs is "
            << "kept readable";
  for (int k = c.first; k <= c.last; ++k) chain_of_[k] = -1;
  c.layer.reset();
}

std::pair<int, int> Net::FusedSpan(int i) const {
  if (chain_of_.empty() || chain_of_[i] < 0) return {i, i};
  const FusedChain& c = chains_[chain_of_[i]];
  return {c.first, c.last};
}

const Layer* Net::fused_layer_at(int i) const {
  return chain_of_.empty() || chain_of_[i] < 0 ? nullptr : chains_[chain_of_[i]].layer.get();
}

bool Net::ForwardRun(int i, int start, int end, LayerRun* run) {
  const auto [first, last] = FusedSpan(i);
  if (first == last || first < start || last > end) {
    *run = {layers_[i].get(), &bottom_vecs_[i], &top_vecs_[i], nullptr};
    return true;
  }
  if (i != first) return false;
  FusedChain& c = chains_[chain_of_[i]];
  *run = {c.layer.get(), &c.bottom, &c.top, nullptr};
  return true;
}

bool Net::BackwardRun(int i, int start, int end, LayerRun* run) {
  const auto [first, last] = FusedSpan(i);
  if (first == last || first < end || last > start) {
    *run = {layers_[i].get(), &bottom_vecs_[i], &top_vecs_[i], &bottom_need_backward_[i]};
    return layer_need_backward_[i];
  }
  FusedChain& c = chains_[chain_of_[i]];
  if (i != last || !c.runs_backward) return false;
  *run = {c.layer.get(), &c.bottom, &c.top, &c.propagate_down};
  return true;
}

float Net::ForwardLayer(int i) {
  LayerRun run;
  return ForwardRun(i, 0, static_cast<int>(layers_.size()) - 1, &run) ? run.layer->Forward(*run.bottom, *run.top) : 0;
}

void Net::BackwardLayer(int i) {
  LayerRun run;
  if (BackwardRun(i, static_cast<int>(layers_.size()) - 1, 0, &run))
    run.layer->Backward(*run.top, *run.propagate_down, *run.bottom);
}

}  // namespace cortado
