// net_rules.hpp — NetParameter rewrites applied before a net is built (see net_rules.cpp).
#pragma once

#include <string>

#include "cortado/context.hpp"
#include "cortado/cortado.pb.h"

namespace cortado {

// Turns the deprecated net-level input / input_dim / input_shape fields into a leading Input layer.
void UpgradeNetInputs(NetParameter* param);
// Inserts a Split layer after every top that feeds more than one bottom (or feeds one and carries a
// loss weight), renaming the consumers' bottoms; names follow Caffe's "<blob>_<layer>_<i>_split".
NetParameter InsertSplits(const NetParameter& param, const std::string& source);
// Whether the net asks for 16-bit storage anywhere (net or layer forward_type / backward_type).
bool NetIsMixedPrecision(const NetParameter& param);
// The storage of every layer's tops made explicit in its forward_type, backward_type and layout, with
// Cast layers where a blob's type or layout changes (net_precision.cpp), for a mixed-precision or NHWC
// net on `device`; a float NCHW net is returned as it is.
NetParameter PlanStorage(const NetParameter& param, Device device, const std::string& source);
}  // namespace cortado
