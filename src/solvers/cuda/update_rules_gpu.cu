// update_rules_gpu.cu — the solver's arithmetic on a GPU: the six update rules, each one fused kernel
// over the flat buffers, and weight decay, with the formulas of update_rules.hpp in the order of float
// operations of the CPU loops (update_rules.cpp, regularize.cpp); and host copies of solver history
// ordered with the compute stream.
#include <cuda_runtime.h>
#include <glog/logging.h>

#include <algorithm>
#include <vector>

#include "cortado/cuda/resources.hpp"  // cuda::Stream, CORTADO_CUDA_CHECK, CORTADO_KERNEL_LOOP
#include "cortado/update_rules.hpp"    // FlatParams, UpdateConstants, gpu_update, gpu_regularize

namespace cortado {

namespace {

using cuda::BlocksFor;
using cuda::kThreads;

// Up to kGpuSegmentsPerLaunch segments, passed by value as a kernel argument (1.3 KB of the 4 KB a
// kernel's arguments may hold). mult is the segment's lr_mult (updates) or its λ (weight decay).
struct SegmentTable {
  int size = 0;
  int64_t offset[kGpuSegmentsPerLaunch];
  int64_t count[kGpuSegmentsPerLaunch];
  float mult[kGpuSegmentsPerLaunch];
};

// The segments in tables of at most kGpuSegmentsPerLaunch, with mult(segment); segments that are
// empty or whose mult is skip_mult (a λ of 0) are left out. launch(table, largest count) per table.
template <typename Mult, typename Launch>
void ForEachTable(const FlatParams& p, Mult mult, bool skip_zero_mult, Launch launch) {
  SegmentTable table;
  int64_t largest = 0;
  auto flush = [&] {
    if (table.size > 0) launch(table, largest);
    table.size = 0;
    largest = 0;
  };
  for (const ParamSegment& s : p.segments) {
    CHECK(s.offset >= 0 && s.count >= 0 && s.offset + s.count <= p.count) << "segment outside the flat buffer";
    const float m = mult(s);
    if (s.count == 0 || (skip_zero_mult && m == 0)) continue;
    table.offset[table.size] = s.offset;
    table.count[table.size] = s.count;
    table.mult[table.size] = m;
    largest = std::max(largest, s.count);
    if (++table.size == kGpuSegmentsPerLaunch) flush();
  }
  flush();
}

// ---- update rules --------------------------------------------------------------------------------

// One rule's update of every segment of the table: each thread walks the table and strides through
// each segment. α = rate · lr_mult as on the CPU; h1 is null for the one-buffer rules.
template <UpdateConstants::Kind kind>
__global__ void UpdateKernel(SegmentTable table, UpdateConstants c, float rate, float* __restrict__ w,
                             float* __restrict__ g, float* __restrict__ h0, float* __restrict__ h1) {
  for (int s = 0; s < table.size; ++s) {
    const int64_t base = table.offset[s];
    const float alpha = rate * table.mult[s];
    CORTADO_KERNEL_LOOP(j, table.count[s]) {
      const int64_t i = base + j;
      const float gi = g[i];
      float u;
      if (kind == UpdateConstants::kSGD) {  // h = μ·h + α·g; u = h
        u = alpha * gi + c.mu * h0[i];
        h0[i] = u;
      } else if (kind == UpdateConstants::kNesterov) {  // h' = μ·h + α·g; u = (1+μ)·h' − μ·h
        const float old = h0[i];
        const float v = alpha * gi + c.mu * old;
        u = (1.0f + c.mu) * v + -c.mu * old;
        h0[i] = v;
      } else if (kind == UpdateConstants::kAdaGrad) {  // h += g²; u = α·g / (√h + δ)
        const float hi = h0[i] + gi * gi;
        u = alpha * (gi / (sqrtf(hi) + c.delta));
        h0[i] = hi;
      } else if (kind == UpdateConstants::kRMSProp) {  // h = ρ·h + (1−ρ)·g²; u = α·g / (√h + δ)
        const float hi = (1.0f - c.mu) * (gi * gi) + c.mu * h0[i];
        u = alpha * (gi / (sqrtf(hi) + c.delta));
        h0[i] = hi;
      } else if (kind == UpdateConstants::kAdaDelta) {  // h, then d = g·√((s+δ)/(h+δ)), s; u = α·d
        const float hi = (1.0f - c.mu) * (gi * gi) + c.mu * h0[i];
        const float d = gi * sqrtf((c.delta + h1[i]) / (c.delta + hi));
        u = alpha * d;
        h0[i] = hi;
        h1[i] = (1.0f - c.mu) * (d * d) + c.mu * h1[i];
      } else {  // Adam: m = β₁·m + (1−β₁)·g; v = β₂·v + (1−β₂)·g²; u = α·correction · m / (√v + ε)
        const float mi = (1.0f - c.mu) * gi + c.mu * h0[i];
        const float vi = (1.0f - c.mu2) * (gi * gi) + c.mu2 * h1[i];
        u = (alpha * c.correction) * (mi / (sqrtf(vi) + c.delta));
        h0[i] = mi;
        h1[i] = vi;
      }
      g[i] = u;
      w[i] -= u;
    }
  }
}

template <UpdateConstants::Kind kind>
void Update(Context& ctx, const UpdateConstants& c, FlatParams& p, const std::vector<float*>& history,
            float rate) {
  const bool two = kind == UpdateConstants::kAdaDelta || kind == UpdateConstants::kAdam;
  CHECK_EQ(history.size(), two ? 2u : 1u) << "history buffers of the update";
  float* h1 = two ? history[1] : nullptr;
  ForEachTable(p, [](const ParamSegment& s) { return s.lr_mult; }, false,
               [&](const SegmentTable& table, int64_t largest) {
                 UpdateKernel<kind><<<BlocksFor(largest), kThreads, 0, cuda::Stream(ctx)>>>(
                     table, c, rate, p.data, p.diff, history[0], h1);
                 CORTADO_CUDA_LAUNCH_CHECK();
               });
}

// ---- weight decay --------------------------------------------------------------------------------

// g += λ·w (L2) or g += λ·sign(w) (L1), λ = the table's mult.
template <bool l1>
__global__ void DecayKernel(SegmentTable table, const float* __restrict__ w, float* __restrict__ g) {
  for (int s = 0; s < table.size; ++s) {
    const int64_t base = table.offset[s];
    const float decay = table.mult[s];
    CORTADO_KERNEL_LOOP(j, table.count[s]) {
      const int64_t i = base + j;
      if (l1) {
        g[i] += decay * static_cast<float>((0.0f < w[i]) - (w[i] < 0.0f));
      } else {
        g[i] += decay * w[i];
      }
    }
  }
}

}  // namespace

void gpu_update(Context& ctx, const UpdateConstants& c, FlatParams& params, const std::vector<float*>& history,
                float rate) {
  switch (c.kind) {
    case UpdateConstants::kSGD: return Update<UpdateConstants::kSGD>(ctx, c, params, history, rate);
    case UpdateConstants::kNesterov: return Update<UpdateConstants::kNesterov>(ctx, c, params, history, rate);
    case UpdateConstants::kAdaGrad: return Update<UpdateConstants::kAdaGrad>(ctx, c, params, history, rate);
    case UpdateConstants::kRMSProp: return Update<UpdateConstants::kRMSProp>(ctx, c, params, history, rate);
    case UpdateConstants::kAdaDelta: return Update<UpdateConstants::kAdaDelta>(ctx, c, params, history, rate);
    case UpdateConstants::kAdam: return Update<UpdateConstants::kAdam>(ctx, c, params, history, rate);
  }
  LOG(FATAL) << "unknown update kind " << static_cast<int>(c.kind);
}

void gpu_regularize(Context& ctx, FlatParams& params, float weight_decay, bool l1) {
  ForEachTable(params, [weight_decay](const ParamSegment& s) { return weight_decay * s.decay_mult; }, true,
               [&](const SegmentTable& table, int64_t largest) {
                 if (l1) {
                   DecayKernel<true><<<BlocksFor(largest), kThreads, 0, cuda::Stream(ctx)>>>(table, params.data,
                                                                                             params.diff);
                 } else {
                   DecayKernel<false><<<BlocksFor(largest), kThreads, 0, cuda::Stream(ctx)>>>(table, params.data,
                                                                                              params.diff);
                 }
                 CORTADO_CUDA_LAUNCH_CHECK();
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
