// channels_last.hpp — which layers compute on NHWC blobs and which convolutions on 16-bit storage,
// asked by the Net's storage plan (net_precision.cpp) before any layer exists. Element-wise layers read
// and write any layout; these are the ones that index channels:
//   Convolution: on the CPU through oneDNN's nhwc code, on the GPU through cuDNN's NHWC descriptors
//   (ConvolutionRunsChannelsLast, convolution.cpp);
//   BatchNorm, and Scale over axis 1 alone, on either device: their per-channel loops see an NHWC blob
//   as N·H·W planes of C channels of one element (batch_norm.hpp, scale.cpp).
//   Pooling, MAX and AVE with one top, on the GPU: its kernels index either layout (pooling_math.hpp).
#pragma once

#include "cortado/context.hpp"
#include "cortado/cortado.pb.h"

namespace cortado {

bool ConvolutionRunsChannelsLast(const LayerParameter& layer, Device device);
// Whether a convolution's own arithmetic reads and writes `type` (data and diffs alike): float always;
// bf16 on the CPU where oneDNN runs it (AVX-512 BF16 or AMX); bf16 and fp16 on the GPU where cuDNN
// runs it (float sums either way).
bool ConvolutionComputesOn(const LayerParameter& layer, Type type, Device device);
// Whether a Pooling's own arithmetic reads and writes `type` (data and diffs alike): float always; bf16
// and fp16 for MAX and AVE with one top (no mask top), on the GPU and on a CPU where oneDNN does not
// pool (float windows, each output rounded once: pooling.cpp). STOCHASTIC and the mask top are float only.
bool PoolingComputesOn(const LayerParameter& layer, Type type, Device device);
// Whether a Pooling computes on NHWC blobs: on the GPU, MAX and AVE with one top (its kernels index
// either layout); the CPU's loops and oneDNN's pooling read NCHW.
bool PoolingRunsChannelsLast(const LayerParameter& layer, Device device);

}  // namespace cortado
