// softmax_loss.cu — SoftmaxWithLoss's kernels (kernels/dense.hpp), and the label check it shares with
// Accuracy. The loss is summed in a fixed order with loss_sums.cuh (the work buffer's layout is there),
// so it is the same from run to run; the normalizer stays on the device for the backward pass, so
// nothing waits but the check of the labels.
#include <cfloat>

#include "cortado/cuda/loss_sums.cuh"
#include "cortado/cuda/resources.hpp"  // cuda::Stream, CORTADO_KERNEL_LOOP, CORTADO_LAUNCH
#include "cortado/kernels/dense.hpp"

namespace cortado {

namespace {

using cuda::kLossBlocks;
using cuda::kNoBadLabel;
using cuda::LabelOf;
using cuda::PartialCount;
using cuda::PartialLoss;
using cuda::StoreLossPartials;
static_assert(cuda::kLossWorkUsed <= kSoftmaxLossWorkFloats, "the loss scratch is too small");

__global__ void LossPartialsKernel(int64_t positions, int64_t channels, int64_t inner, const float* prob,
                                   const float* label, bool has_ignore, int ignore_label, double* partial_loss,
                                   double* partial_count, unsigned* flag) {
  double loss = 0, count = 0;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < positions;
       p += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int l = LabelOf(label[p]);
    if (has_ignore && l == ignore_label) continue;
    if (l < 0 || l >= channels) {
      atomicMin(flag, static_cast<unsigned>(p));
      continue;
    }
    const int64_t i = p / inner, j = p % inner;
    loss -= logf(fmaxf(prob[(i * channels + l) * inner + j], FLT_MIN));
    count += 1;
  }
  StoreLossPartials(loss, count, partial_loss, partial_count);
}

__global__ void LossBackwardKernel(int64_t n, int64_t channels, int64_t inner, const float* prob, const float* label,
                                   bool has_ignore, int ignore_label, const float* dloss, const float* normalizer,
                                   float* dx) {
  const float scale = dloss[0] / normalizer[0];
  CORTADO_KERNEL_LOOP(k, n) {
    const int64_t i = k / (channels * inner), c = k / inner % channels, j = k % inner;
    const int l = LabelOf(label[i * inner + j]);
    if (has_ignore && l == ignore_label) {
      dx[k] = 0.0f;
    } else {
      dx[k] = scale * prob[k] - (c == l ? scale : 0.0f);
    }
  }
}

}  // namespace

int64_t FirstBadLabelGpu(Context& ctx, const float* flag, const float* labels, float* value_host) {
  if (value_host == nullptr) return -1;
  const cudaStream_t stream = cuda::Stream(ctx);
  unsigned first = kNoBadLabel;
  CORTADO_CUDA_CHECK(cudaMemcpyAsync(&first, flag, sizeof first, cudaMemcpyDeviceToHost, stream));
  CORTADO_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (first == kNoBadLabel) return -1;
  CORTADO_CUDA_CHECK(cudaMemcpyAsync(value_host, labels + first, sizeof(float), cudaMemcpyDeviceToHost, stream));
  CORTADO_CUDA_CHECK(cudaStreamSynchronize(stream));
  return first;
}

int64_t SoftmaxLossForwardGpu(Context& ctx, int64_t outer, int64_t channels, int64_t inner, const float* prob,
                              const float* label, bool has_ignore, int ignore_label, bool by_valid_count,
                              double normalizer, float* work, float* loss, float* bad_value_host) {
  const cudaStream_t stream = cuda::Stream(ctx);
  double* partial_loss = PartialLoss(work);
  double* partial_count = PartialCount(work);
  unsigned* flag = cuda::LossFlag(work);
  CORTADO_CUDA_CHECK(cudaMemsetAsync(flag, 0xff, sizeof(unsigned), stream));
  CORTADO_LAUNCH(LossPartialsKernel, kLossBlocks, cuda::kThreads, 0, stream, outer * inner, channels, inner, prob,
                 label, has_ignore, ignore_label, partial_loss, partial_count, flag);
  cuda::QueueLossFinish(ctx, work, by_valid_count, normalizer, loss);
  return FirstBadLabelGpu(ctx, work + cuda::kLossFlag, label, bad_value_host);
}

void SoftmaxLossBackwardGpu(Context& ctx, int64_t outer, int64_t channels, int64_t inner, const float* prob,
                            const float* label, bool has_ignore, int ignore_label, const float* dloss,
                            const float* work, float* dx) {
  const int64_t n = outer * channels * inner;
  if (n == 0) return;
  CORTADO_LAUNCH(LossBackwardKernel, cuda::BlocksFor(n), cuda::kThreads, 0, cuda::Stream(ctx), n, channels, inner, prob,
                 label, has_ignore, ignore_label, dloss, work + cuda::kLossNormalizer, dx);
}

}  // namespace cortado
