// update_rules_gpu.cu — the solver's arithmetic on a GPU: the six update rules, each one fused kernel
// over the flat buffers, and weight decay; the formulas are update_math.hpp's, which the CPU loops
// (update_rules.cpp, regularize.cpp) share; and host copies of solver history ordered with the compute
// stream.
#include <cuda_runtime.h>
#include <glog/logging.h>

#include <algorithm>
#include <vector>

#include "cortado/cuda/resources.hpp"  // cuda::Stream, CORTADO_LAUNCH, CORTADO_KERNEL_LOOP
#include "cortado/update_rules.hpp"    // FlatParams, UpdateConstants, gpu_update, gpu_regularize
#include "../update_math.hpp"            // RuleStep

namespace cortado {

namespace {

using cuda::BlocksFor;
using cuda::kThreads;

// Up to kGpuSegmentsPerLaunch segments, passed by value as a kernel argument (1.8 KB of the 4 KB a
// kernel's arguments may hold), with each segment's lr_mult and λ = weight_decay · decay_mult.
struct SegmentTable {
  int size = 0;
  int64_t offset[kGpuSegmentsPerLaunch];
  int64_t count[kGpuSegmentsPerLaunch];
  float lr_mult[kGpuSegmentsPerLaunch];
  float decay[kGpuSegmentsPerLaunch];
};

// The segments in tables of at most kGpuSegmentsPerLaunch; empty segments, and those keep() refuses,
// are left out. launch(table, largest count) per table.
template <typename Keep, typename Launch>
void ForEachTable(const FlatParams& p, float weight_decay, Keep keep, Launch launch) {
  SegmentTable table;
  int64_t largest = 0;
  auto flush = [&] {
    if (table.size > 0) launch(table, largest);
    table.size = 0;
    largest = 0;
  };
  for (const ParamSegment& s : p.segments) {
    CHECK(s.offset >= 0 && s.count >= 0 && s.offset + s.count <= p.count) << "segment outside the flat buffer";
    const float decay = weight_decay * s.decay_mult;
    if (s.count == 0 || !keep(decay)) continue;
    table.offset[table.size] = s.offset;
    table.count[table.size] = s.count;
    table.lr_mult[table.size] = s.lr_mult;
    table.decay[table.size] = decay;
    largest = std::max(largest, s.count);
    if (++table.size == kGpuSegmentsPerLaunch) flush();
  }
  flush();
}

// What an update kernel does besides the rule: the rate and Adam's correction by value, or read from
// device floats (a captured step's StepInputs); the gradient's processing folded in, in the CPU's
// order — g·grad_scale (1 / iter_size, or a device float under dynamic loss scaling), g·clip (clip a device float, or null), g + λ·w or λ·sign(w);
// and, when first_nonfinite is set, the record of the first iteration whose g·grad_scale is not finite.
struct UpdateArgs {
  float rate = 0;
  const float* rate_at = nullptr;
  const float* correction_at = nullptr;
  const float* clip_at = nullptr;
  float grad_scale = 1;
  const float* grad_scale_at = nullptr;
  const int* skip_at = nullptr;
  bool decay = false;
  bool l1 = false;
  int* first_nonfinite = nullptr;
  const uint64_t* iteration_at = nullptr;
};

// ---- update rules --------------------------------------------------------------------------------

// One rule's update of every segment of the table: each thread walks the table and strides through
// each segment. α = rate · lr_mult as on the CPU; h1 is null for the one-buffer rules.
template <UpdateConstants::Kind kind>
__global__ void UpdateKernel(SegmentTable table, UpdateConstants c, UpdateArgs a, float* __restrict__ w,
                             float* __restrict__ g, float* __restrict__ h0, float* __restrict__ h1) {
  if (a.skip_at != nullptr && *a.skip_at != 0) return;  // dynamic loss scaling: an overflowed step
  const float rate = a.rate_at != nullptr ? *a.rate_at : a.rate;
  const float correction = a.correction_at != nullptr ? *a.correction_at : c.correction;
  const float clip = a.clip_at != nullptr ? *a.clip_at : 1.0f;
  const float grad_scale = a.grad_scale_at != nullptr ? *a.grad_scale_at : a.grad_scale;
  for (int s = 0; s < table.size; ++s) {
    const int64_t base = table.offset[s];
    const float alpha = rate * table.lr_mult[s];
    const float decay = a.decay ? table.decay[s] : 0.0f;
    CORTADO_KERNEL_LOOP(j, table.count[s]) {
      const int64_t i = base + j;
      float gi = g[i];
      if (grad_scale != 1.0f) gi = gi * grad_scale;
      if (a.first_nonfinite != nullptr && !isfinite(gi))  // −1 until the first one; later ones leave it
        atomicCAS(a.first_nonfinite, -1, static_cast<int>(*a.iteration_at));
      if (a.clip_at != nullptr) gi = gi * clip;
      if (decay != 0.0f) gi = gi + (a.l1 ? DecayTerm<true>(decay, w[i]) : DecayTerm<false>(decay, w[i]));
      float unused = 0;
      const float u = RuleStep<kind>(c, alpha, correction, gi, h0[i], HasTwoHistories(kind) ? h1[i] : unused);
      g[i] = u;
      w[i] -= u;
    }
  }
}

template <UpdateConstants::Kind kind>
void Update(Context& ctx, const UpdateConstants& c, FlatParams& p, const std::vector<float*>& history,
            const UpdateArgs& args, float weight_decay) {
  const bool two = kind == UpdateConstants::kAdaDelta || kind == UpdateConstants::kAdam;
  CHECK_EQ(history.size(), two ? 2u : 1u) << "history buffers of the update";
  float* h1 = two ? history[1] : nullptr;
  ForEachTable(p, weight_decay, [](float) { return true; }, [&](const SegmentTable& table, int64_t largest) {
    CORTADO_LAUNCH(UpdateKernel<kind>, BlocksFor(largest), kThreads, 0, cuda::Stream(ctx), table, c, args, p.data,
                   p.diff, history[0], h1);
  });
}

void UpdateAny(Context& ctx, const UpdateConstants& c, FlatParams& params, const std::vector<float*>& history,
               const UpdateArgs& args, float weight_decay) {
  switch (c.kind) {
    case UpdateConstants::kSGD: return Update<UpdateConstants::kSGD>(ctx, c, params, history, args, weight_decay);
    case UpdateConstants::kNesterov:
      return Update<UpdateConstants::kNesterov>(ctx, c, params, history, args, weight_decay);
    case UpdateConstants::kAdaGrad:
      return Update<UpdateConstants::kAdaGrad>(ctx, c, params, history, args, weight_decay);
    case UpdateConstants::kRMSProp:
      return Update<UpdateConstants::kRMSProp>(ctx, c, params, history, args, weight_decay);
    case UpdateConstants::kAdaDelta:
      return Update<UpdateConstants::kAdaDelta>(ctx, c, params, history, args, weight_decay);
    case UpdateConstants::kAdam: return Update<UpdateConstants::kAdam>(ctx, c, params, history, args, weight_decay);
  }
  LOG(FATAL) << "unknown update kind " << static_cast<int>(c.kind);
}

// ---- weight decay --------------------------------------------------------------------------------

// g += λ·w (L2) or g += λ·sign(w) (L1), λ = the table's decay.
template <bool l1>
__global__ void DecayKernel(SegmentTable table, const float* __restrict__ w, float* __restrict__ g) {
  for (int s = 0; s < table.size; ++s) {
    const int64_t base = table.offset[s];
    const float decay = table.decay[s];
    CORTADO_KERNEL_LOOP(j, table.count[s]) g[base + j] += DecayTerm<l1>(decay, w[base + j]);
  }
}

}  // namespace

void gpu_update(Context& ctx, const UpdateConstants& c, FlatParams& params, const std::vector<float*>& history,
                float rate) {
  UpdateArgs args;
  args.rate = rate;
  UpdateAny(ctx, c, params, history, args, 0.0f);
}

void gpu_update_fused(Context& ctx, const UpdateConstants& c, FlatParams& params, const std::vector<float*>& history,
                      const FusedUpdate& fused) {
  UpdateArgs args;
  args.rate_at = fused.rate;
  args.correction_at = fused.correction;
  args.clip_at = fused.clip_scale;
  args.grad_scale = fused.grad_scale;
  args.grad_scale_at = fused.grad_scale_at;
  args.skip_at = fused.skip;
  args.decay = fused.weight_decay != 0.0f;
  args.l1 = fused.l1;
  args.first_nonfinite = fused.first_nonfinite;
  args.iteration_at = fused.iteration;
  UpdateAny(ctx, c, params, history, args, fused.weight_decay);
}

void gpu_regularize(Context& ctx, FlatParams& params, float weight_decay, bool l1) {
  ForEachTable(params, weight_decay, [](float decay) { return decay != 0.0f; },
               [&](const SegmentTable& table, int64_t largest) {
                 if (l1) {
                   CORTADO_LAUNCH(DecayKernel<true>, BlocksFor(largest), kThreads, 0, cuda::Stream(ctx), table,
                                  params.data, params.diff);
                 } else {
                   CORTADO_LAUNCH(DecayKernel<false>, BlocksFor(largest), kThreads, 0, cuda::Stream(ctx), table,
                                  params.data, params.diff);
                 }
               });
}

void gpu_download(Context& ctx, int64_t n, const float* device, float* host) {
  if (n == 0) return;
  CORTADO_CUDA_CHECK(cudaMemcpyAsync(host, device, n * sizeof(float), cudaMemcpyDeviceToHost, cuda::Stream(ctx)));
  CORTADO_CUDA_CHECK(cudaStreamSynchronize(cuda::Stream(ctx)));
}

void gpu_upload(Context& ctx, int64_t n, const float* host, float* device) {
  if (n == 0) return;
  CORTADO_CUDA_CHECK(cudaMemcpyAsync(device, host, n * sizeof(float), cudaMemcpyHostToDevice, cuda::Stream(ctx)));
  CORTADO_CUDA_CHECK(cudaStreamSynchronize(cuda::Stream(ctx)));
}

}  // namespace cortado
