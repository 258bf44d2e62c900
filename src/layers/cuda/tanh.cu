// tanh.cu — TanH's kernels (kernels/neuron.hpp): y = tanh(x); dx = dy · (1 − y²).
#include "cortado/cuda/resources.hpp"  // cuda::Stream, CORTADO_KERNEL_LOOP, CORTADO_CUDA_LAUNCH_CHECK
#include "cortado/kernels/neuron.hpp"

namespace cortado {

namespace {

__global__ void TanHForwardKernel(int64_t n, const float* x, float* y) {
  CORTADO_KERNEL_LOOP(i, n) y[i] = tanhf(x[i]);
}

__global__ void TanHBackwardKernel(int64_t n, const float* y, const float* dy, float* dx) {
  CORTADO_KERNEL_LOOP(i, n) dx[i] = dy[i] * (1.0f - y[i] * y[i]);
}

}  // namespace

void TanHForwardGpu(Context& ctx, int64_t n, const float* x, float* y) {
  if (n == 0) return;
  TanHForwardKernel<<<cuda::BlocksFor(n), cuda::kThreads, 0, cuda::Stream(ctx)>>>(n, x, y);
  CORTADO_CUDA_LAUNCH_CHECK();
}

void TanHBackwardGpu(Context& ctx, int64_t n, const float* y, const float* dy, float* dx) {
  if (n == 0) return;
  TanHBackwardKernel<<<cuda::BlocksFor(n), cuda::kThreads, 0, cuda::Stream(ctx)>>>(n, y, dy, dx);
  CORTADO_CUDA_LAUNCH_CHECK();
}

}  // namespace cortado
