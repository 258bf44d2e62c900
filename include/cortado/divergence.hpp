// divergence.hpp — finding where training went non-finite, so a diverging run stops with a message
// that names the first layer whose output or gradient holds NaN or infinity.
#pragma once

#include <cstdint>
#include <string>

#include "cortado/context.hpp"
#include "cortado/net.hpp"

namespace cortado {

// Whether all n values are finite (a vectorised pass; no early exit).
bool AllFinite(const float* values, int64_t n);
// The same for values on ctx's device (on a GPU: one reduction, gpu_all_finite, which waits).
bool AllFinite(Context& ctx, const float* values, int64_t n);

// Where the net's forward and backward first produce a non-finite value: a layer's parameters, then
// each layer's outputs in forward order, then gradients in backward order; "" when every value is
// finite. The pass runs again on the batch the data layers hold, layer by layer, each value checked
// as soon as it is made (the memory plan lets later buffers reuse earlier ones' memory). Blobs on a
// GPU are read through host copies.
std::string FindNonFinite(Net& net, Context& ctx);

}  // namespace cortado
