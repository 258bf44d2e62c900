// step_stats.cu — a GPU training step's gradient statistics and bookkeeping (step_stats.hpp).
#include <cub/block/block_reduce.cuh>

#include <algorithm>
#include <cmath>

#include "cortado/cuda/resources.hpp"  // cuda::Stream, CORTADO_CUDA_CHECK, CORTADO_LAUNCH
#include "step_stats.hpp"

namespace cortado::step_stats {

namespace {

struct Larger {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

// loss_scale: null, or the step's loss scale (a device float) that g is divided by too. largest: null,
// or where each block's largest finite |g| goes (adaptive loss scaling).
__global__ void SumSquaresKernel(int64_t n, const float* g, float grad_scale, const float* loss_scale,
                                 double* partials, float* largest) {
  if (loss_scale != nullptr) grad_scale = grad_scale / *loss_scale;
  double sum = 0;
  float most = 0.0f;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float gi = g[i];
    if (grad_scale != 1.0f) gi = gi * grad_scale;
    sum += static_cast<double>(gi) * gi;
    if (isfinite(gi)) most = fmaxf(most, fabsf(gi));
  }
  using Reduce = cub::BlockReduce<double, cuda::kThreads>;
  using ReduceFloat = cub::BlockReduce<float, cuda::kThreads>;
  __shared__ union {
    typename Reduce::TempStorage sums;
    typename ReduceFloat::TempStorage largest;
  } storage;
  const double block_sum = Reduce(storage.sums).Sum(sum);
  if (threadIdx.x == 0) partials[blockIdx.x] = block_sum;
  if (largest == nullptr) return;
  __syncthreads();  // the storage is reused
  const float block_most = ReduceFloat(storage.largest).Reduce(most, Larger{});
  if (threadIdx.x == 0) largest[blockIdx.x] = block_most;
}

__global__ void FinishKernel(float clip, int iter_size, int average, const uint64_t* iter_word, float* loss,
                             float* state, int growth_interval, float adaptive_factor) {
  double sumsq = 0;  // clipping off: not summed (the update kernel checks the gradient's finiteness)
  const bool dynamic = growth_interval > 0, adaptive = adaptive_factor > 0.0f;
  if (clip >= 0.0f || dynamic || adaptive) {
    const double* partials = reinterpret_cast<const double*>(state);
    for (int b = 0; b < kBlocks; ++b) sumsq += partials[b];
  }
  // Scaled on the device (dynamic or adaptive): the update multiplies g by 1 / (iter_size · this step's
  // scale), and only an overflow under dynamic scaling skips it.
  const bool overflow = dynamic && !isfinite(sumsq);
  if (dynamic || adaptive) {
    state[kGradFactor] = 1.0f / (static_cast<float>(iter_size) * state[kLossScale]);
    reinterpret_cast<int*>(state)[kSkip] = overflow ? 1 : 0;
  }
  if (dynamic) {  // as the CPU solver's UnscaleGradients: skip and halve, or count and maybe double
    const float scale = state[kLossScale];
    int* clean = reinterpret_cast<int*>(state + kCleanSteps);
    if (overflow) {
      reinterpret_cast<int*>(state)[kSkippedSteps] += 1;
      reinterpret_cast<int*>(state)[kLastSkipped] = static_cast<int>(*iter_word);
      state[kLossScale] = scale * 0.5f;
      *clean = 0;
    } else if (++*clean >= growth_interval) {
      state[kLossScale] = scale * 2.0f;
      *clean = 0;
    }
  }
  if (adaptive) {  // as the CPU solver's UnscaleGradients: K · 4 / the largest finite |g|
    float largest = 0.0f;
    for (int b = 0; b < kBlocks; ++b) largest = fmaxf(largest, state[kLargestPartials + b]);
    state[kLossScale] = adaptive_factor * (largest > 0.0f ? 4.0f / largest : 1.0f);
  }
  if (clip >= 0.0f) {
    const float norm = static_cast<float>(sqrt(sumsq));
    state[kNorm] = norm;
    state[kClipScale] = norm > clip ? clip / norm : 1.0f;
  } else {
    state[kNorm] = -1.0f;
    state[kClipScale] = 1.0f;
  }
  const float step_loss = *loss / static_cast<float>(iter_size);
  *loss = 0.0f;
  int* count = reinterpret_cast<int*>(state + kLossCount);
  state[kLossRing + *count % average] = step_loss;
  *count += 1;
  int* first = reinterpret_cast<int*>(state + kFirstNonFinite);
  const bool diverged = overflow ? false : !(isfinite(sumsq) && isfinite(step_loss));
  if (diverged && *first < 0) *first = static_cast<int>(*iter_word);
}

__global__ void SetLossScaleKernel(float* state, float scale, int clean_steps) {
  state[kLossScale] = scale;
  reinterpret_cast<int*>(state)[kCleanSteps] = clean_steps;
  reinterpret_cast<int*>(state)[kSkippedSteps] = 0;
  reinterpret_cast<int*>(state)[kSkip] = 0;
  reinterpret_cast<int*>(state)[kLastSkipped] = -1;
  state[kGradFactor] = 1.0f;
}

__global__ void LossDiffKernel(float* diff, int64_t n, float weight, const float* state) {
  const float value = weight * state[kLossScale];
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    diff[i] = value;
}

}  // namespace

void Reset(Context& ctx, float* state) {
  CORTADO_CUDA_CHECK(cudaMemsetAsync(state + kFirstNonFinite, 0xff, sizeof(int), cuda::Stream(ctx)));  // −1
  ResetLosses(ctx, state);
}

void ResetLosses(Context& ctx, float* state) {
  CORTADO_CUDA_CHECK(cudaMemsetAsync(state + kLossCount, 0, sizeof(int), cuda::Stream(ctx)));
}

void Queue(Context& ctx, int64_t n, const float* g, float grad_scale, float clip, int iter_size, int average,
           const uint64_t* iter_word, float* loss, float* state, int growth_interval, float adaptive_factor) {
  const cudaStream_t stream = cuda::Stream(ctx);
  const bool dynamic = growth_interval > 0, adaptive = adaptive_factor > 0.0f;
  // Clipping reads the norm, dynamic scaling whether it is finite, adaptive scaling the largest |g|.
  if (clip >= 0.0f || dynamic || adaptive) {
    CORTADO_LAUNCH(SumSquaresKernel, kBlocks, cuda::kThreads, 0, stream, n, g, grad_scale,
                   dynamic || adaptive ? state + kLossScale : nullptr, reinterpret_cast<double*>(state),
                   adaptive ? state + kLargestPartials : nullptr);
  }
  CORTADO_LAUNCH(FinishKernel, 1, 1, 0, stream, clip, iter_size, average, iter_word, loss, state, growth_interval,
                 adaptive_factor);
}

void SetLossScale(Context& ctx, float* state, float scale, int clean_steps) {
  CORTADO_LAUNCH(SetLossScaleKernel, 1, 1, 0, cuda::Stream(ctx), state, scale, clean_steps);
}

void WriteLossDiff(Context& ctx, float* diff, int64_t n, float weight, const float* state) {
  const int blocks = static_cast<int>(std::min<int64_t>((n + cuda::kThreads - 1) / cuda::kThreads, 1024));
  CORTADO_LAUNCH(LossDiffKernel, std::max(blocks, 1), cuda::kThreads, 0, cuda::Stream(ctx), diff, n, weight, state);
}

}  // namespace cortado::step_stats
