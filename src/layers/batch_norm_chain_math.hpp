// batch_norm_chain_math.hpp — the arithmetic of a fused BatchNorm chain (batch_norm_chain.cpp), once for
// both devices (kernels/for_each.hpp): BatchNorm, then optionally Scale's y = γ·x̂ + β, then optionally
// an activation (ReLU with a slope ≥ 0, or Sigmoid), in two passes over memory each way instead of one
// or two per layer. x, y, x̂ and their gradients may be float or 16-bit storage (bf16, fp16: one type
// for all, read as float, each output its float result rounded once); the statistics, γ, β and their
// gradients are float, and the sums run in double. cuda/batch_norm_chain_math.cu instantiates them for
// the GPU, for each storage type.
//
// Per channel c, with m values and z = γ·x̂ + β the pre-activation, y = act(z):
//   statistics: one pass sums x and x² in double; mean = Σx / m, var = Σx² / m − mean² (at least 0);
//   forward:    x̂ = (x − mean) / std, std = sqrt(var + eps); y = act(γ·x̂ + β);
//   backward:   dz = dy · act'(y) (from y: ReLU's y > 0, Sigmoid's y(1 − y)); one pass sums Σdz and
//               Σdz·x̂, which are dβ and dγ; with dx̂ = γ·dz, BatchNorm's means are
//               mean(dx̂) = γ·Σdz / m and mean(dx̂·x̂) = γ·Σdz·x̂ / m, and
//               dx = (γ·dz − mean(dx̂) − x̂·mean(dx̂·x̂)) / std   (global statistics: dx = γ·dz / std).
// γ and β are a Scale's, or a BatchNorm's own (scale_bias); γ null reads as 1 and β null as 0 (no Scale,
// or a Scale without bias_term).
#pragma once

#include <math.h>

#include <cstdint>

#include "cortado/kernels/for_each.hpp"
#include "neuron_math.hpp"  // ReLU's and Sigmoid's forward and backward

namespace cortado::batch_norm_chain {

// The activation that ends the chain, applied to z and differentiated from y = act(z). A template
// argument, so that each loop is compiled for its own (and vectorised where the activation allows).
enum class Activation : int { kNone = 0, kReLU = 1, kSigmoid = 2 };

template <Activation A>
struct Act {
  float slope;  // ReLU's negative_slope (≥ 0)
  CORTADO_HOST_DEVICE float Apply(float z) const {
    if constexpr (A == Activation::kReLU) return neuron::ReLUForward{slope}(z);
    if constexpr (A == Activation::kSigmoid) return neuron::SigmoidForward{}(z);
    return z;
  }
  // dz from dy and y (ReLU's mask from y: y > 0 exactly where z > 0, for slope ≥ 0).
  CORTADO_HOST_DEVICE float Gradient(float y, float dy) const {
    if constexpr (A == Activation::kReLU) return neuron::ReLUBackward{slope}(y, dy);
    if constexpr (A == Activation::kSigmoid) return neuron::SigmoidBackward{}(y, dy);
    return dy;
  }
};

// ---- statistics: Σx and Σx², and what they become ---------------------------------------------------
// The sums' terms read x, dy, y and x̂ of the blobs' storage type T (float, BFloat16 or Float16) as
// float; the deduction guides take T (and the activation) from the arguments (SumAndSquares{x}).
template <typename T>
struct SumAndSquares {
  static constexpr int kSums = 2;
  const T* x;
  CORTADO_HOST_DEVICE void operator()(int64_t i, int64_t, double* sum) const {
    const double v = ToFloat(x[i]);
    sum[0] += v;
    sum[1] += v * v;
  }
};
template <typename T>
SumAndSquares(const T*) -> SumAndSquares<T>;
// mean and std into BatchNorm's statistics, and the running sums updated as BatchNorm updates them
// (running_var gets correction · var; channel 0 also updates the weight).
struct StoreBatchStats {
  double m;
  float eps, maf, correction;
  float *mean, *std, *running_mean, *running_var, *factor;
  CORTADO_HOST_DEVICE void operator()(int64_t c, const double* total) const {
    const double mu = total[0] / m;
    const double second = total[1] / m - mu * mu;
    const float var = static_cast<float>(second > 0 ? second : 0.0);
    mean[c] = static_cast<float>(mu);
    std[c] = sqrtf(var + eps);
    running_mean[c] = running_mean[c] * maf + mean[c];
    running_var[c] = running_var[c] * maf + correction * var;
    if (c == 0) *factor = *factor * maf + 1.0f;
  }
};

// ---- forward, per element ------------------------------------------------------------------------------
// (The element-wise functors map float values: MapChannels reads and writes the storage type.)
// y = act(γ·x̂ + β) from x̂.
template <Activation A>
struct ScaleShiftAct {
  const float* gamma;
  const float* beta;
  Act<A> act;
  CORTADO_HOST_DEVICE float operator()(int64_t c, float x_norm) const {
    const float z = gamma ? x_norm * gamma[c] : x_norm;
    return act.Apply(beta ? z + beta[c] : z);
  }
};
// y = act(γ·(x − mean)/std + β) from x, when x̂ is not kept (no backward follows).
template <Activation A>
struct NormalizeScaleShiftAct {
  const float* mean;
  const float* std;
  ScaleShiftAct<A> rest;
  CORTADO_HOST_DEVICE float operator()(int64_t c, float x) const { return rest(c, (x - mean[c]) / std[c]); }
};

// ---- backward --------------------------------------------------------------------------------------------
// Σdz and Σdz·x̂ per channel, dz = act'(y)·dy.
template <Activation A, typename T>
struct GradientSums {
  static constexpr int kSums = 2;
  const T* dy;
  const T* y;
  const T* x_norm;
  Act<A> act;
  CORTADO_HOST_DEVICE void operator()(int64_t i, int64_t, double* sum) const {
    const float dz = act.Gradient(ToFloat(y[i]), ToFloat(dy[i]));
    sum[0] += dz;
    sum[1] += static_cast<double>(dz) * ToFloat(x_norm[i]);
  }
};
template <Activation A, typename T>
GradientSums(const T*, const T*, const T*, Act<A>) -> GradientSums<A, T>;
// From a channel's Σdz and Σdz·x̂: dβ += Σdz and dγ += Σdz·x̂ (where wanted: null skips), and BatchNorm's
// means[c] = mean(dx̂), means[channels + c] = mean(dx̂·x̂) for the dx pass.
struct StoreGradients {
  double m;
  int64_t channels;
  const float* gamma;
  float* means;
  float* gamma_diff;
  float* beta_diff;
  CORTADO_HOST_DEVICE void operator()(int64_t c, const double* total) const {
    if (beta_diff) beta_diff[c] = static_cast<float>(beta_diff[c] + total[0]);
    if (gamma_diff) gamma_diff[c] = static_cast<float>(gamma_diff[c] + total[1]);
    const double g = gamma ? gamma[c] : 1.0;
    means[c] = static_cast<float>(g * total[0] / m);
    means[channels + c] = static_cast<float>(g * total[1] / m);
  }
};
// dx from dy, y and x̂ (batch statistics).
template <Activation A>
struct BatchBackward {
  const float* gamma;
  const float* std;
  const float* means;
  int64_t channels;
  Act<A> act;
  CORTADO_HOST_DEVICE float operator()(int64_t c, float dy, float y, float x_norm) const {
    const float dz = act.Gradient(y, dy);
    const float dx_norm = gamma ? gamma[c] * dz : dz;
    return (dx_norm - means[c] - x_norm * means[channels + c]) / std[c];
  }
};
// dx = γ·dz / std (global statistics).
template <Activation A>
struct GlobalBackward {
  const float* gamma;
  const float* std;
  Act<A> act;
  CORTADO_HOST_DEVICE float operator()(int64_t c, float dy, float y) const {
    const float dz = act.Gradient(y, dy);
    return (gamma ? gamma[c] * dz : dz) / std[c];
  }
};

}  // namespace cortado::batch_norm_chain
