// euclidean_loss.cu — EuclideanLoss's kernels (kernels/neuron.hpp). The loss is one block's reduction
// in double (like the CPU's double sum, and in a fixed order, so the same inputs give the same loss);
// it is written to the loss top on the device, so Forward queues it without waiting. The gradient
// reads dloss from the top's diff on the device for the same reason.
#include "cortado/cuda/resources.hpp"  // cuda::Stream, CORTADO_KERNEL_LOOP, CORTADO_LAUNCH
#include "cortado/kernels/neuron.hpp"

namespace cortado {

namespace {

constexpr int kReduceThreads = 512;

__global__ void SquaredDistanceKernel(int64_t n, const float* a, const float* b, double divisor, float* loss) {
  __shared__ double partial[kReduceThreads];
  double sum = 0;
  for (int64_t i = threadIdx.x; i < n; i += kReduceThreads) {
    const float d = a[i] - b[i];
    sum += d * d;
  }
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int half = kReduceThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) *loss = static_cast<float>(partial[0] / divisor);
}

__global__ void ScaledDifferenceKernel(int64_t n, const float* a, const float* b, const float* dloss, float divisor,
                                       float sign, float* d) {
  const float s = sign * (*dloss / divisor);
  CORTADO_KERNEL_LOOP(i, n) d[i] = s * (a[i] - b[i]);
}

}  // namespace

void EuclideanLossForwardGpu(Context& ctx, int64_t n, const float* a, const float* b, double divisor, float* loss) {
  CORTADO_LAUNCH(SquaredDistanceKernel, 1, kReduceThreads, 0, cuda::Stream(ctx), n, a, b, divisor, loss);
}

void EuclideanLossBackwardGpu(Context& ctx, int64_t n, const float* a, const float* b, const float* dloss,
                              float divisor, float sign, float* d) {
  if (n == 0) return;
  CORTADO_LAUNCH(ScaledDifferenceKernel, cuda::BlocksFor(n), cuda::kThreads, 0, cuda::Stream(ctx), n, a, b, dloss,
                 divisor, sign, d);
}

}  // namespace cortado
