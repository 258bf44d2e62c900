// recurrent.cu — the RNN and LSTM layers' small element-wise kernels (kernels/recurrent.hpp): scaling
// each stream's row by its continuation indicator, and adding a bias or per-stream term at every step.
#include "cortado/cuda/resources.hpp"  // cuda::Stream, CORTADO_KERNEL_LOOP, CORTADO_LAUNCH
#include "cortado/kernels/recurrent.hpp"

namespace cortado {

namespace {

__global__ void ScaleRowsKernel(int64_t total, int dim, const float* s, const float* x, bool accumulate,
                                float* y) {
  CORTADO_KERNEL_LOOP(index, total) {
    const float v = s[index / dim] * x[index];
    y[index] = accumulate ? y[index] + v : v;
  }
}

__global__ void AddBroadcastKernel(int64_t n, int64_t inner, const float* b, float* y) {
  CORTADO_KERNEL_LOOP(i, n) y[i] += b[i % inner];
}

}  // namespace

void ScaleRowsGpu(Context& ctx, int rows, int dim, const float* s, const float* x, bool accumulate, float* y) {
  const int64_t total = static_cast<int64_t>(rows) * dim;
  if (total == 0) return;
  CORTADO_LAUNCH(ScaleRowsKernel, cuda::BlocksFor(total), cuda::kThreads, 0, cuda::Stream(ctx), total, dim, s, x,
                 accumulate, y);
}

void AddBroadcastGpu(Context& ctx, int64_t n, int64_t inner, const float* b, float* y) {
  if (n == 0 || inner == 0) return;
  CORTADO_LAUNCH(AddBroadcastKernel, cuda::BlocksFor(n), cuda::kThreads, 0, cuda::Stream(ctx), n, inner, b, y);
}

}  // namespace cortado
