// update_rules.hpp — the solver's arithmetic over the flat parameter buffers: the learning-rate
// schedule, gradient clipping, weight decay, and the six update rules (SGD, Nesterov, AdaGrad,
// RMSProp, AdaDelta, Adam), with Caffe's formulas and parameter names.
//
// All learnable parameters live in one flat data buffer and one flat gradient buffer; a segment is
// one parameter blob inside them, with its lr_mult and decay_mult. A rule's history is a set of
// buffers of the same length, indexed like the parameters. The functions without a Context run on
// host memory; those taking one run on the context's device (on a GPU: device memory, the same
// formulas in src/solvers/cuda/update_rules_gpu.cu, queued on the compute stream).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "cortado/context.hpp"
#include "cortado/cortado.pb.h"

namespace cortado {

// One learnable parameter inside the flat buffers: elements [offset, offset + count).
struct ParamSegment {
  int64_t offset;
  int64_t count;
  float lr_mult;
  float decay_mult;
};

// The flat buffers: data (weights w) and diff (gradients g), both `count` floats. Only the elements
// covered by segments are read or written.
struct FlatParams {
  float* data;
  float* diff;
  int64_t count;
  std::vector<ParamSegment> segments;
};

class Net;
// A Net's learnable parameters as the rules see them: its flat data and gradient buffers, one segment
// per learnable blob (in learnable_params() order) with its lr_mult and decay_mult.
FlatParams FlatParamsOf(Net& net);

// ---- learning rate -------------------------------------------------------------------------------

// The learning rate for iteration `iter` (base = base_lr, γ = gamma):
//   fixed      base
//   step       base · γ^⌊iter / stepsize⌋
//   exp        base · γ^iter
//   inv        base · (1 + γ·iter)^(−power)
//   multistep  base · γ^CurrentStep(param, iter)
//   poly       base · (1 − iter / max_iter)^power
//   sigmoid    base / (1 + e^(−γ·(iter − stepsize)))
// Throws Error for an unknown lr_policy (listing the known ones) and for a missing or invalid field
// the policy needs (naming it). For multistep it logs Caffe's "MultiStep Status: Iteration N,
// step = K" when `iter` is the iteration where the step advances, so call it once per iteration.
float LearningRate(const SolverParameter& param, int iter);

// The step index used at iteration `iter`, as Caffe's SolverState.current_step holds it: for step,
// ⌊iter / stepsize⌋; for multistep, the position reached through stepvalue when the rate is asked
// for once per iteration from 0 — Caffe advances by at most one stepvalue per iteration, when
// iter >= stepvalue(current_step) — so for increasing stepvalues it is the number of them <= iter.
// 0 for the other policies. A snapshot taken after iteration N−1 (file "_iter_N") stores
// CurrentStep(param, N − 1).
int CurrentStep(const SolverParameter& param, int iter);

// ---- gradient processing -------------------------------------------------------------------------

// n = ‖g‖₂ over all segments. If n > clip_gradients (>= 0), scales every gradient by clip / n and logs
// Caffe's "Gradient clipping: scaling down gradients (L2 norm n > clip) by scale factor s".
// Returns n; a negative clip_gradients (clipping off) returns −1 without reading anything.
float ClipGradients(FlatParams& params, float clip_gradients);

// Weight decay with λ = weight_decay · decay_mult per segment (skipped where λ = 0):
//   regularization_type "L2" (default): g += λ·w;   "L1": g += λ·sign(w), sign(0) = 0.
// Any other regularization_type throws Error.
void Regularize(FlatParams& params, const SolverParameter& param);

// The same two on ctx's device: the functions above on a CPU context. On a GPU, clipping sums
// squares with gpu_sumsq once per run of adjacent segments (one run for a Net's flat buffer), waits
// for the norm, logs the same line and scales each run with gpu_scale; weight decay is one kernel
// launch over the segment table (update_rules_gpu.cu).
float ClipGradients(Context& ctx, FlatParams& params, float clip_gradients);
void Regularize(Context& ctx, FlatParams& params, const SolverParameter& param);

// ---- update rules --------------------------------------------------------------------------------

// What a rule's GPU kernel needs besides the buffers: which formula, and its constants as the rule
// holds them (the kernel derives 1+μ, 1−μ, 1−β₁, 1−β₂ in float, as the CPU loops do).
struct UpdateConstants {
  enum Kind { kSGD, kNesterov, kAdaGrad, kRMSProp, kAdaDelta, kAdam } kind = kSGD;
  float mu = 0;          // μ of SGD, Nesterov and AdaDelta; ρ of RMSProp; β₁ of Adam
  float mu2 = 0;         // β₂ of Adam
  float delta = 0;       // δ, or Adam's ε
  float correction = 1;  // Adam: √(1−β₂ᵗ)/(1−β₁ᵗ), computed in double and rounded once
};

// Updates w with the local rate α = rate · lr_mult of each segment, g the (processed) gradient,
// μ = momentum, δ = delta, and history buffers h (and s, or m and v):
//   SGD       h = μ·h + α·g;                 u = h
//   Nesterov  h' = μ·h + α·g;                u = (1+μ)·h' − μ·h;  h = h'
//   AdaGrad   h += g²;                       u = α·g / (√h + δ)             (momentum must be 0)
//   RMSProp   h = ρ·h + (1−ρ)·g²;            u = α·g / (√h + δ)             (ρ = rms_decay ∈ [0,1), momentum 0)
//   AdaDelta  h = μ·h + (1−μ)·g²;  d = g·√((s+δ)/(h+δ));  s = μ·s + (1−μ)·d²;  u = α·d
//   Adam      m = β₁·m + (1−β₁)·g;  v = β₂·v + (1−β₂)·g²;  u = α·√(1−β₂ᵗ)/(1−β₁ᵗ) · m / (√v + ε)
//             (β₁ = momentum, β₂ = momentum2, ε = delta, t = iter + 1)
// then w −= u, and u is left in the gradient buffer (as Caffe leaves it in the diff).
class UpdateRule {
 public:
  // The rule named by param.type ("SGD", "Nesterov", "AdaGrad", "RMSProp", "AdaDelta", "Adam"), or by
  // the deprecated solver_type enum when type is unset. Throws Error for an unknown type (listing the
  // known ones), for both type and solver_type set, and for parameters the rule forbids.
  static std::unique_ptr<UpdateRule> Create(const SolverParameter& param);
  virtual ~UpdateRule() = default;

  virtual const char* type() const = 0;
  // History buffers kept, each FlatParams::count floats, zero at the start: SGD, Nesterov, AdaGrad,
  // RMSProp 1 (h); AdaDelta 2 (h: squared gradients, s: squared updates); Adam 2 (m, v). A Caffe
  // SolverState lists them per parameter blob, buffer 0's blobs first, then buffer 1's.
  virtual int num_history() const = 0;

  // One update of every segment in a single fused pass; history.size() == num_history().
  virtual void Apply(FlatParams& params, const std::vector<float*>& history, float rate,
                     int iter) = 0;
  // The same update on ctx's device: Apply on a CPU context; on a GPU, params and history are device
  // memory and the rule's one fused kernel updates every segment (gpu_update).
  void ApplyOn(Context& ctx, FlatParams& params, const std::vector<float*>& history, float rate, int iter);
  virtual UpdateConstants constants(int iter) const = 0;
};

// ---- on a GPU (src/solvers/cuda/update_rules_gpu.cu; a CPU-only build's stubs throw) -------------

// One update of every segment by the rule `c` describes, with the formulas above: one kernel launch
// per kGpuSegmentsPerLaunch segments (the segment table — offset, count, lr_mult — travels as the
// kernel's argument; each thread walks the table and strides through every segment). Queued on ctx's
// compute stream; nothing waits.
constexpr int kGpuSegmentsPerLaunch = 64;
void gpu_update(Context& ctx, const UpdateConstants& c, FlatParams& params, const std::vector<float*>& history,
                float rate);
// The update of a GPU training step with the gradient's processing folded into the same kernel
// (gpu_step.hpp), so that one launch, capturable into a CUDA graph, does what ClipGradients,
// Regularize and ApplyOn do on the CPU, in their order, per element:
//   g ← g · grad_scale (1 / iter_size; skipped when 1)  ·  *clip_scale (when set: min(1, clip / ‖g‖))
//   g ← g + λ·w  (or λ·sign(w) for L1), λ = weight_decay · decay_mult, skipped where λ = 0
// then the rule, with the rate and Adam's correction read from device floats (c.correction unused),
// which the host rewrites before every step. Where the step computes no gradient norm (clipping off),
// the kernel also watches g · grad_scale: at the first non-finite value it writes the iteration
// (*iteration) into *first_nonfinite unless that already holds one (it is −1 until then).
struct FusedUpdate {
  const float* rate = nullptr;        // device
  const float* correction = nullptr;  // device; Adam only
  const float* clip_scale = nullptr;  // device, or null: no clipping
  float grad_scale = 1;
  const float* grad_scale_at = nullptr;  // device, or null: grad_scale (dynamic loss scaling's 1 / (iter_size · scale))
  const int* skip = nullptr;             // device, or null: when it holds 1 the update changes nothing (an overflow)
  float weight_decay = 0;
  bool l1 = false;
  int* first_nonfinite = nullptr;       // device, or null: nothing watched
  const uint64_t* iteration = nullptr;  // device; read only where a non-finite value is met
};
void gpu_update_fused(Context& ctx, const UpdateConstants& c, FlatParams& params, const std::vector<float*>& history,
                      const FusedUpdate& fused);
// Whether the solver's regularization_type is "L1" (else "L2"); throws Error naming any other.
bool IsL1Regularization(const SolverParameter& param);
// g += λ·w (L2) or g += λ·sign(w) (L1) with λ = weight_decay · decay_mult per segment, segments with
// λ = 0 skipped: one launch per kGpuSegmentsPerLaunch segments, as gpu_update.
void gpu_regularize(Context& ctx, FlatParams& params, float weight_decay, bool l1);
// n floats between host memory and ctx's GPU, in order with the compute stream, waiting for the copy
// (solver history in and out of snapshots).
void gpu_download(Context& ctx, int64_t n, const float* device, float* host);
void gpu_upload(Context& ctx, int64_t n, const float* host, float* device);

}  // namespace cortado
