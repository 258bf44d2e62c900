// divergence.cpp — scans a net's blobs for the first non-finite value after a step went wrong (GPU
// blobs through host copies).
#include "cortado/divergence.hpp"

#include <cmath>
#include <vector>

#include "cortado/layer.hpp"
#include "cortado/math_gpu.hpp"

namespace cortado {

bool AllFinite(const float* values, int64_t n) {
  // x − x is 0 for a finite x and NaN for NaN or ±inf; the sum stays 0 only if all are finite.
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < n; ++i) sum += values[i] - values[i];
  return sum == 0.0f;
}

bool AllFinite(Context& ctx, const float* values, int64_t n) {
  if (ctx.device() == Device::kGPU) return gpu_all_finite(ctx, n, values);
  return AllFinite(values, n);
}

namespace {

bool HostFinite(const std::vector<float>& values) {
  return AllFinite(values.data(), static_cast<int64_t>(values.size()));
}
bool DataFinite(const Blob& blob) {
  if (blob.device() == Device::kGPU) return HostFinite(blob.ReadData());
  return AllFinite(blob.data(), blob.count());
}
bool DiffFinite(const Blob& blob) {
  if (!blob.has_diff()) return true;
  if (blob.device() == Device::kGPU) return HostFinite(blob.ReadDiff());
  return AllFinite(blob.diff(), blob.count());
}

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
