// filler.hpp — initial values for learnable blobs, as Caffe's FillerParameter describes them:
// constant, uniform, gaussian (optionally sparse), xavier, msra, positive_unitball, bilinear.
// fan_in = count / shape(0), fan_out = count / shape(1); variance_norm picks which n the scale uses.
#pragma once

#include <random>

#include "cortado/blob.hpp"
#include "cortado/cortado.pb.h"

namespace cortado {

// Fills blob->data() (a bound host blob). Throws Error on an unknown filler type.
void FillBlob(const FillerParameter& filler, Blob* blob, std::mt19937& rng);

}  // namespace cortado
