// sigmoid.cu — Sigmoid's kernels (kernels/neuron.hpp): y = 1 / (1 + e^−x); dx = dy · y · (1 − y).
#include "cortado/cuda/resources.hpp"  // cuda::Stream, CORTADO_KERNEL_LOOP, CORTADO_CUDA_LAUNCH_CHECK
#include "cortado/kernels/neuron.hpp"

namespace cortado {

namespace {

__global__ void SigmoidForwardKernel(int64_t n, const float* x, float* y) {
  CORTADO_KERNEL_LOOP(i, n) y[i] = 1.0f / (1.0f + expf(-x[i]));
}

__global__ void SigmoidBackwardKernel(int64_t n, const float* y, const float* dy, float* dx) {
  CORTADO_KERNEL_LOOP(i, n) dx[i] = dy[i] * y[i] * (1.0f - y[i]);
}

}  // namespace

void SigmoidForwardGpu(Context& ctx, int64_t n, const float* x, float* y) {
  if (n == 0) return;
  SigmoidForwardKernel<<<cuda::BlocksFor(n), cuda::kThreads, 0, cuda::Stream(ctx)>>>(n, x, y);
  CORTADO_CUDA_LAUNCH_CHECK();
}

void SigmoidBackwardGpu(Context& ctx, int64_t n, const float* y, const float* dy, float* dx) {
  if (n == 0) return;
  SigmoidBackwardKernel<<<cuda::BlocksFor(n), cuda::kThreads, 0, cuda::Stream(ctx)>>>(n, y, dy, dx);
  CORTADO_CUDA_LAUNCH_CHECK();
}

}  // namespace cortado
