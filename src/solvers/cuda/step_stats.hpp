// step_stats.hpp — the kernels that end a GPU training step's passes (gpu_step.cpp): the gradient's
// sum of squares (when clipping needs it) and the step's bookkeeping on the device. CUDA sources only.
#pragma once

#include <cstdint>

#include "cortado/context.hpp"

namespace cortado::step_stats {

// The layout of a stepper's device state, in floats (the partial sums are doubles at its start).
constexpr int kBlocks = 128;
constexpr int kNorm = 2 * kBlocks;  // ‖g‖ of the last update, before clipping; −1 when clipping is off
constexpr int kClipScale = kNorm + 1;
constexpr int kFirstNonFinite = kNorm + 2;  // int: first iteration with a non-finite loss or gradient, or −1
constexpr int kLossCount = kNorm + 3;       // int: losses recorded since the last reset
constexpr int kLossRing = kNorm + 4;        // `average` floats
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
void Queue(Context& ctx, int64_t n, const float* g, float grad_scale, float clip, int iter_size, int average,
           const uint64_t* iter_word, float* loss, float* state);

}  // namespace cortado::step_stats
