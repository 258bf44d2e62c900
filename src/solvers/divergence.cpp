// divergence.cpp — scans a net's blobs for the first non-finite value after a step went wrong.
#include "cortado/divergence.hpp"

#include <cmath>

#include "cortado/layer.hpp"

namespace cortado {

bool AllFinite(const float* values, int64_t n) {
  // x − x is 0 for a finite x and NaN for NaN or ±inf; the sum stays 0 only if all are finite.
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < n; ++i) sum += values[i] - values[i];
  return sum == 0.0f;
}

namespace {

bool DataFinite(const Blob& blob) { return AllFinite(blob.data(), blob.count()); }
bool DiffFinite(const Blob& blob) { return !blob.has_diff() || AllFinite(blob.diff(), blob.count()); }

std::string LayerName(const Layer& layer) {
  return "layer '" + layer.name() + "' (" + layer.type() + ")";
}

}  // namespace

std::string FindNonFinite(const Net& net) {
  const auto& layers = net.layers();
  for (size_t i = 0; i < layers.size(); ++i) {
    for (size_t k = 0; k < layers[i]->blobs().size(); ++k) {
      if (!DataFinite(*layers[i]->blobs()[k]))
        return "the parameters (blob " + std::to_string(k) + ") of " + LayerName(*layers[i]) +
               " are not finite: an earlier update diverged";
    }
    for (size_t t = 0; t < net.top_vecs()[i].size(); ++t) {
      if (!DataFinite(*net.top_vecs()[i][t]))
        return LayerName(*layers[i]) + " produced a non-finite output '" +
               net.blob_names()[net.top_ids()[i][t]] + "'";
    }
  }
  for (size_t i = layers.size(); i-- > 0;) {
    if (!net.layer_need_backward()[i]) continue;
    for (size_t k = 0; k < layers[i]->blobs().size(); ++k) {
      if (!DiffFinite(*layers[i]->blobs()[k]))
        return LayerName(*layers[i]) + " produced a non-finite gradient for its parameters (blob " +
               std::to_string(k) + ")";
    }
    for (size_t b = 0; b < net.bottom_vecs()[i].size(); ++b) {
      if (net.bottom_need_backward()[i][b] && !DiffFinite(*net.bottom_vecs()[i][b]))
        return LayerName(*layers[i]) + " produced a non-finite gradient for its input '" +
               net.blob_names()[net.bottom_ids()[i][b]] + "'";
    }
  }
  return "";
}

}  // namespace cortado
