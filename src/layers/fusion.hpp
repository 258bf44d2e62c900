// fusion.hpp — layers that run a chain of the net's layers as one (the Net finds the chains at set-up,
// net_fusion.cpp). A fused layer computes what its chain computes, within float rounding, in fewer passes
// over memory (on 16-bit storage each value it stores is such a float result rounded once, where the
// layers may round theirs to the neighbouring 16-bit value, and round what they pass each other too).
// It holds no parameters or buffers of its own but reads and writes those of the chain's layers, which
// stay in the net with their names and blobs, so weights files, solver states and parameter sharing see
// the same net, and a pass may run the chain fused or layer by layer.
#pragma once

#include <memory>

#include "cortado/context.hpp"
#include "cortado/layer.hpp"

namespace cortado {

// BatchNorm → [Scale] → [ReLU (negative_slope ≥ 0) | Sigmoid]: `scale` and `activation` may be null, not
// both. Bottom: BatchNorm's bottom. Tops: BatchNorm's top (which holds x̂ afterwards, for the backward
// pass; it may be the chain's last top when nothing runs backward), then the chain's last top.
// Requires a Scale of one bottom over axis 1 with one axis (γ per channel). The chain computes on the
// storage type of its bottom (float, bf16 or fp16), which its tops share.
// A BatchNorm with scale_bias has γ and β of its own: then `scale` must be null, `activation` may be
// too, and the first top is the BatchNorm's x̂ buffer (ScaleBiasXNorm) rather than its top.
std::unique_ptr<Layer> MakeBatchNormChain(Context& ctx, Layer& batch_norm, Layer* scale, Layer* activation);

// The buffer where a BatchNorm with scale_bias keeps x̂ for its backward pass; null for any other layer.
Blob* ScaleBiasXNorm(Layer& layer);

// Eltwise SUM of two bottoms → ReLU (negative_slope ≥ 0) in place on the sum. Bottoms: Eltwise's; top:
// the sum's (and the ReLU's).
std::unique_ptr<Layer> MakeEltwiseReLU(Context& ctx, Layer& eltwise, Layer& relu);

}  // namespace cortado
