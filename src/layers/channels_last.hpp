// channels_last.hpp — which layers compute on NHWC blobs (and which on bf16), asked by the Net's storage plan
// (net_precision.cpp) before any layer exists; on the CPU only so far. Element-wise layers read and
// write any layout; these are the ones that index channels:
//   Convolution: on the CPU through oneDNN's nhwc code (ConvolutionRunsChannelsLast, convolution.cpp);
//   BatchNorm, and Scale over axis 1 alone: their per-channel loops see an NHWC blob as N·H·W planes of
//   C channels of one element (batch_norm.hpp, scale.cpp).
#pragma once

#include "cortado/context.hpp"
#include "cortado/cortado.pb.h"

namespace cortado {

bool ConvolutionRunsChannelsLast(const LayerParameter& layer, Device device);
// And in bf16 (oneDNN's bf16 convolutions, where the CPU has AVX-512 BF16 or AMX): the one layer whose
// own arithmetic reads and writes 16-bit storage so far.
bool ConvolutionComputesBf16(const LayerParameter& layer, Device device);

}  // namespace cortado
