// step_stats.hpp — the kernels that end a GPU training step's passes (gpu_step.cpp): the gradient's
// sum of squares (when clipping needs it) and the step's bookkeeping on the device. CUDA sources only.
#pragma once

#include <cstdint>

#include "cortado/context.hpp"

namespace cortado::step_stats {

// The layout of a stepper's device state, in floats (the partial sums are doubles at its start, then
// the blocks' largest finite |g|, for adaptive loss scaling).
constexpr int kBlocks = 128;
constexpr int kLargestPartials = 2 * kBlocks;
constexpr int kNorm = 3 * kBlocks;  // ‖g‖ of the last update, before clipping; −1 when clipping is off
constexpr int kClipScale = kNorm + 1;
constexpr int kFirstNonFinite = kNorm + 2;  // int: first iteration with a non-finite loss or gradient, or −1
constexpr int kLossCount = kNorm + 3;       // int: losses recorded since the last reset
// Dynamic and adaptive loss scaling (Net::LossScaling), kept on the device so that a captured step needs
// no host:
constexpr int kLossScale = kNorm + 4;       // the scale of the step under way (its loss diffs' factor)
constexpr int kCleanSteps = kNorm + 5;      // int: clean steps since the scale last changed
constexpr int kSkippedSteps = kNorm + 6;    // int: steps skipped since the stepper was made
constexpr int kSkip = kNorm + 7;            // int: 1 when this step's gradients overflowed (its update is skipped)
constexpr int kGradFactor = kNorm + 8;      // 1 / (iter_size · the step's scale): what the update multiplies g by
constexpr int kLastSkipped = kNorm + 9;     // int: the last iteration skipped, or −1
constexpr int kLossRing = kNorm + 10;       // `average` floats
constexpr int StateFloats(int average) { return kLossRing + average; }

// Sets the counters of a fresh state (no non-finite iteration, no losses), on ctx's compute stream.
void Reset(Context& ctx, float* state);
void ResetLosses(Context& ctx, float* state);

// Queues, when clip >= 0: Σ (g·grad_scale)² in double (kBlocks partial sums, then one thread adds them
// in order), the norm and clipping's scale. Always: the loss *loss / iter_size into the ring (and *loss
// zeroed for the next step); the iteration *iter_word when the loss or the sum is not finite and none
// was before. With clip < 0 nothing reads the gradient here (the norm reads −1, the scale 1): the fused
// update kernel records a non-finite gradient instead (FusedUpdate::first_nonfinite), so divergence
// is caught at the same iteration either way.
//
// With dynamic loss scaling (growth_interval > 0) the sum of squares is always made, of g·grad_scale
// divided by the step's scale (state[kLossScale]); a sum that is not finite means an overflow: the
// step is marked skipped (kSkip, which the update kernel reads), counted and its iteration kept, and the
// scale halved; otherwise the clean steps are counted and the scale doubles after growth_interval of
// them. kGradFactor receives 1 / (iter_size · the step's scale) first. An overflow is not divergence.
//
// With adaptive loss scaling (adaptive_factor K > 0; growth_interval 0), as NVIDIA Caffe's
// global_grad_scale_adaptive and the CPU solver: the largest finite |g| of the step (g unscaled as
// above) sets the next step's scale, K · 4 / largest (K when every gradient is 0); no step is skipped.
void Queue(Context& ctx, int64_t n, const float* g, float grad_scale, float clip, int iter_size, int average,
           const uint64_t* iter_word, float* loss, float* state, int growth_interval = 0,
           float adaptive_factor = 0.0f);

// Dynamic or adaptive loss scaling: the scale and clean-step count to start from (on ctx's compute stream), and
// no step skipped yet.
void SetLossScale(Context& ctx, float* state, float scale, int clean_steps);
// diff[0 .. n) = weight · state[kLossScale]: a loss top's gradient at the step's scale.
void WriteLossDiff(Context& ctx, float* diff, int64_t n, float weight, const float* state);

}  // namespace cortado::step_stats
