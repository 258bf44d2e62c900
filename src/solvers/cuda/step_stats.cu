// step_stats.cu — a GPU training step's gradient statistics and bookkeeping (step_stats.hpp).
#include <cub/block/block_reduce.cuh>

#include <cmath>

#include "cortado/cuda/resources.hpp"  // cuda::Stream, CORTADO_CUDA_CHECK, CORTADO_LAUNCH
#include "step_stats.hpp"

namespace cortado::step_stats {

namespace {

__global__ void SumSquaresKernel(int64_t n, const float* g, float grad_scale, double* partials) {
  double sum = 0;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float gi = g[i];
    if (grad_scale != 1.0f) gi = gi * grad_scale;
    sum += static_cast<double>(gi) * gi;
  }
  using Reduce = cub::BlockReduce<double, cuda::kThreads>;
  __shared__ typename Reduce::TempStorage storage;
  const double block_sum = Reduce(storage).Sum(sum);
  if (threadIdx.x == 0) partials[blockIdx.x] = block_sum;
}

__global__ void FinishKernel(float clip, int iter_size, int average, const uint64_t* iter_word, float* loss,
                             float* state) {
  double sumsq = 0;  // clipping off: not summed (the update kernel checks the gradient's finiteness)
  if (clip >= 0.0f) {
    const double* partials = reinterpret_cast<const double*>(state);
    for (int b = 0; b < kBlocks; ++b) sumsq += partials[b];
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
  if (!(isfinite(sumsq) && isfinite(step_loss)) && *first < 0) *first = static_cast<int>(*iter_word);
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
           const uint64_t* iter_word, float* loss, float* state) {
  const cudaStream_t stream = cuda::Stream(ctx);
  if (clip >= 0.0f) {  // only clipping reads the norm
    CORTADO_LAUNCH(SumSquaresKernel, kBlocks, cuda::kThreads, 0, stream, n, g, grad_scale,
                   reinterpret_cast<double*>(state));
  }
  CORTADO_LAUNCH(FinishKernel, 1, 1, 0, stream, clip, iter_size, average, iter_word, loss, state);
}

}  // namespace cortado::step_stats
