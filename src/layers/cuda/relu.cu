// relu.cu — ReLU's kernels (kernels/neuron.hpp): y = max(0, x) + slope · min(0, x) and its gradient.
#include "cortado/cuda/resources.hpp"  // cuda::Stream, CORTADO_KERNEL_LOOP, CORTADO_CUDA_LAUNCH_CHECK
#include "cortado/kernels/neuron.hpp"

namespace cortado {

namespace {

__global__ void ReLUForwardKernel(int64_t n, float slope, const float* x, float* y) {
  CORTADO_KERNEL_LOOP(i, n) y[i] = x[i] > 0 ? x[i] : slope * x[i];
}

__global__ void ReLUBackwardKernel(int64_t n, float slope, const float* x, const float* dy, float* dx) {
  CORTADO_KERNEL_LOOP(i, n) dx[i] = dy[i] * (x[i] > 0 ? 1.0f : slope);
}

}  // namespace

void ReLUForwardGpu(Context& ctx, int64_t n, float slope, const float* x, float* y) {
  if (n == 0) return;
  ReLUForwardKernel<<<cuda::BlocksFor(n), cuda::kThreads, 0, cuda::Stream(ctx)>>>(n, slope, x, y);
  CORTADO_CUDA_LAUNCH_CHECK();
}

void ReLUBackwardGpu(Context& ctx, int64_t n, float slope, const float* x, const float* dy, float* dx) {
  if (n == 0) return;
  ReLUBackwardKernel<<<cuda::BlocksFor(n), cuda::kThreads, 0, cuda::Stream(ctx)>>>(n, slope, x, dy, dx);
  CORTADO_CUDA_LAUNCH_CHECK();
}

}  // namespace cortado
