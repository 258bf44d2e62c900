// eltwise.cu — Eltwise MAX's kernels (kernels/neuron.hpp): the running maximum with the winning
// bottom's index in a mask (strict >, so ties keep the first bottom, as on the CPU), and its gradient.
#include "cortado/cuda/resources.hpp"  // cuda::Stream, CORTADO_KERNEL_LOOP, CORTADO_LAUNCH
#include "cortado/kernels/neuron.hpp"

namespace cortado {

namespace {

__global__ void MaxStepKernel(int64_t n, const float* x, float k, float* y, float* mask) {
  CORTADO_KERNEL_LOOP(i, n) {
    if (x[i] > y[i]) {
      y[i] = x[i];
      mask[i] = k;
    }
  }
}

__global__ void MaxBackwardKernel(int64_t n, const float* mask, float k, const float* dy, float* dx) {
  CORTADO_KERNEL_LOOP(i, n) dx[i] = mask[i] == k ? dy[i] : 0.0f;
}

}  // namespace

void EltwiseMaxStepGpu(Context& ctx, int64_t n, const float* x, int k, float* y, float* mask) {
  if (n == 0) return;
  CORTADO_LAUNCH(MaxStepKernel, cuda::BlocksFor(n), cuda::kThreads, 0, cuda::Stream(ctx), n, x, static_cast<float>(k),
                 y, mask);
}

void EltwiseMaxBackwardGpu(Context& ctx, int64_t n, const float* mask, int k, const float* dy, float* dx) {
  if (n == 0) return;
  CORTADO_LAUNCH(MaxBackwardKernel, cuda::BlocksFor(n), cuda::kThreads, 0, cuda::Stream(ctx), n, mask,
                 static_cast<float>(k), dy, dx);
}

}  // namespace cortado
