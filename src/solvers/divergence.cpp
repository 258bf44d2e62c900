// divergence.cpp — after a step went wrong, runs the pass again layer by layer to name the first
// non-finite value (GPU blobs through host copies).
#include "cortado/divergence.hpp"

#include <cmath>
#include <vector>

#include "cortado/layer.hpp"
#include "cortado/math_gpu.hpp"
#include "cortado/step_inputs.hpp"

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

std::string FindNonFinite(Net& net, Context& ctx) {
  const auto& layers = net.layers();
  const int n = static_cast<int>(layers.size());
  for (int i = 0; i < n; ++i)
    for (size_t k = 0; k < layers[i]->blobs().size(); ++k)
      if (!DataFinite(*layers[i]->blobs()[k]))
        return "the parameters (blob " + std::to_string(k) + ") of " + LayerName(*layers[i]) +
               " are not finite: an earlier update diverged";
  // The pass again, each value checked as soon as it is made: under memory reuse a blob's memory
  // may hold a later buffer's values by now. Data layers are not run again; their tops keep the batch.
  if (ctx.device() == Device::kGPU) {
    net.PrepareStep();
    StepInputsOf(ctx).Upload(ctx);
  }
  for (int i = 0; i < n; ++i) {
    if (!net.bottom_vecs()[i].empty()) {
      layers[i]->Forward(net.bottom_vecs()[i], net.top_vecs()[i]);
      ctx.Synchronize();
    }
    for (size_t t = 0; t < net.top_vecs()[i].size(); ++t)
      if (!DataFinite(*net.top_vecs()[i][t]))
        return LayerName(*layers[i]) + " produced a non-finite output '" + net.blob_names()[net.top_ids()[i][t]] + "'";
  }
  if (net.phase() != TRAIN) return "";
  net.ClearParamDiffs();
  for (int i = n - 1; i >= 0; --i) {
    if (!net.layer_need_backward()[i]) continue;
    layers[i]->Backward(net.top_vecs()[i], net.bottom_need_backward()[i], net.bottom_vecs()[i]);
    ctx.Synchronize();
    for (size_t k = 0; k < layers[i]->blobs().size(); ++k)
      if (!DiffFinite(*layers[i]->blobs()[k]))
        return LayerName(*layers[i]) + " produced a non-finite gradient for its parameters (blob " +
               std::to_string(k) + ")";
    for (size_t b = 0; b < net.bottom_vecs()[i].size(); ++b)
      if (net.bottom_need_backward()[i][b] && !DiffFinite(*net.bottom_vecs()[i][b]))
        return LayerName(*layers[i]) + " produced a non-finite gradient for its input '" +
               net.blob_names()[net.bottom_ids()[i][b]] + "'";
  }
  return "";
}

}  // namespace cortado
