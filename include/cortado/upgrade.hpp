// upgrade.hpp — Caffe's legacy net formats, upgraded on read as Caffe's UpgradeNetAsNeeded does:
//   V0  `layers { bottom: "data" top: "conv1" layer { name: "conv1" type: "conv" num_output: 20
//       kernelsize: 5 blobs_lr: 1 ... } }`, with separate "padding" layers folded into the conv or
//       pool layer they feed;
//   V1  `layers { name: "conv1" type: CONVOLUTION blobs_lr: 1 weight_decay: 1 convolution_param {...} }`;
//   V1 data layers whose data_param / image_data_param / window_data_param hold scale, mean_file,
//       crop_size or mirror (moved into transform_param);
//   net-level `input_dim` (four per input), rewritten as one `input_shape` per input;
//   BatchNorm layers with the three ParamSpecs the old definition needed (their lr_mult and decay_mult
//       set to 0).
// The result has only `layer` entries with string types. Blobs (a .caffemodel's weights) move over
// unchanged, and the other net-level fields (name, input, state, ...) are kept: Net turns `input` +
// `input_shape` into an Input layer when it is built.
#pragma once

#include <string>

#include "cortado/cortado.pb.h"  // NetParameter, V1LayerParameter, V0LayerParameter

namespace cortado {

// Whether UpgradeNet would change anything.
bool NetNeedsUpgrade(const NetParameter& param);

// Upgrades param in place, logging Caffe's "Attempting to upgrade input file specified using
// deprecated V1LayerParameter: <source>" and "Successfully upgraded ..." lines. What cannot be
// upgraded throws a one-line Error starting with source_for_errors and naming the layer: a V1 layer
// without a type or with a type number Caffe never had, an unknown V0 type, a net mixing `layer`
// and `layers`, input_dim not four per input. A V0 setting its layer type does not take is dropped
// with a warning, as in Caffe.
void UpgradeNet(NetParameter* param, const std::string& source_for_errors);

// Caffe's current type string for a V1 type: CONVOLUTION -> "Convolution", SOFTMAX_LOSS ->
// "SoftmaxWithLoss"; "" for NONE or a number outside the enum.
std::string V1LayerTypeName(V1LayerParameter::LayerType type);

}  // namespace cortado
