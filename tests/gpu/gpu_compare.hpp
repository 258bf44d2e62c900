// gpu_compare.hpp — the GPU tests' one tool: run a layer on the CPU and on the GPU with the same
// parameters, inputs and top gradients, and compare everything it produces. Every GPU test starts
// with SKIP_WITHOUT_GPU(), so on a machine without a GPU (CI, the build machine) the GPU suite shows
// as skipped, by name, instead of passing silently.
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "cortado/gpu.hpp"
#include "test_util.hpp"

#define SKIP_WITHOUT_GPU()                                                                          \
  if (::cortado::GpuCount() == 0)                                                                   \
  GTEST_SKIP() << (::cortado::BuiltWithCuda() ? "no GPU on this machine: GPU tests run on the GPU machine" \
                                              : "this build has no CUDA")

namespace cortado::test {

struct GpuCompareOptions {
  float tolerance = 1e-4f;  // |gpu − cpu| ≤ tolerance · max(1, |cpu|), element by element
  float input_std = 1.0f;   // bottoms are Gaussian with this deviation …
  // … except these bottoms, which get integer labels in [0, classes) (classes: their value here).
  std::vector<std::pair<int, int>> label_bottoms;
  bool check_backward = true;
  uint32_t seed = 1701;
  // Let the GPU use TF32 tensor cores (where it has them); the comparison then scales its tolerance
  // (ExpectGpuClose).
  bool tf32 = false;
};

// Sets up `layer_text` on both devices over bottoms of `bottom_shapes`, copies the CPU layer's
// learnable blobs into the GPU layer, fills the same bottoms, runs Forward (comparing tops and the
// returned loss) and, unless check_backward is off, Backward with the same random top diffs (loss
// tops keep their weights), comparing bottom diffs and parameter diffs. Failures say which blob and
// element differ.
void ExpectGpuMatchesCpu(const std::string& layer_text, const std::vector<std::vector<int>>& bottom_shapes,
                         int num_tops = 1, const GpuCompareOptions& options = {});

// What one run of a layer gave, read back to the host (RunForComparison).
struct ComparedRun {
  float loss = 0;
  std::vector<std::vector<float>> tops;  // after Forward
  // After Backward (empty without check_backward): one per bottom, none for label bottoms and bottoms
  // without a diff; the parameter diffs, one per learnable blob.
  std::vector<std::optional<std::vector<float>>> bottom_diffs;
  std::vector<std::vector<float>> param_diffs;
};

// One device's half of ExpectGpuMatchesCpu: fills the fixture's bottoms as it does (Gaussian, labels
// for options.label_bottoms, from a generator seeded with options.seed + 1, so two fixtures of the
// same layer and shapes get the same values), runs Forward and, unless check_backward is off,
// Backward with random top diffs drawn from the same generator (loss tops keep their weights).
ComparedRun RunForComparison(LayerFixture& fixture, const GpuCompareOptions& options);

// Mixed precision: the layer as the one computing layer of a TRAIN net whose default storage type is
// `storage` (BFLOAT16, FLOAT16): float Input layers give it its bottoms, and the Net stores its tops in
// `storage`, with Casts where types change (net_precision.cpp). One device's run, filled and driven as
// RunForComparison's; `params`, when given, replaces the layer's filled parameters.
ComparedRun RunInTypedNet(const std::string& layer_text, const std::vector<std::vector<int>>& bottom_shapes,
                          int num_tops, const GpuCompareOptions& options, Device device, Type storage,
                          const std::vector<std::vector<float>>* params = nullptr, std::vector<std::vector<float>>* filled = nullptr);
// Both devices' RunInTypedNet with the CPU's parameters, compared: values stored in 16 bits may differ
// by one step of their type where the float results straddle a rounding boundary, so the tolerance is
// the row's plus one 16-bit step (relative to max(1, |cpu|)).
void ExpectGpuMatchesCpuInStorage(const std::string& layer_text, const std::vector<std::vector<int>>& bottom_shapes,
                                  int num_tops, const GpuCompareOptions& options, Type storage);

// The same comparison for two values arrays, for tests that drive something other than one layer.
void ExpectNear(const std::vector<float>& gpu, const std::vector<float>& cpu, float tolerance,
                const std::string& what);

// TF32 rounds the inputs of a product to a 10-bit mantissa (relative error up to 2^-11), so a sum of
// K products carries an error that grows with K and is large next to results that happen to be near
// zero: TF32 results are compared as a whole, ‖gpu − cpu‖₂ ≤ kTf32RelativeError · ‖cpu‖₂.
constexpr float kTf32RelativeError = 5e-3f;
void ExpectNearInNorm(const std::vector<float>& gpu, const std::vector<float>& cpu, float relative,
                      const std::string& what);
// The comparison the GPU context calls for: element by element within `fp32_tolerance` in strict
// FP32, in norm within `tf32_relative` when the context uses TF32 (a deep net's outputs carry the
// rounding of every layer: more than one layer's kTf32RelativeError).
void ExpectGpuClose(const Context& gpu_ctx, const std::vector<float>& gpu, const std::vector<float>& cpu,
                    float fp32_tolerance, const std::string& what, float tf32_relative = kTf32RelativeError);

}  // namespace cortado::test
