// infogain_loss.cu — InfogainLoss's kernels (kernels/zoo.hpp), laid out as SoftmaxWithLoss's: the loss is
// summed in a fixed order with loss_sums.cuh (the work buffer's layout is there), the normalizer stays
// on the device for the backward pass, and a bad label is marked in one device word that the forward
// pass reads back (FirstBadLabelGpu).
#include "cortado/cuda/loss_sums.cuh"
#include "cortado/cuda/resources.hpp"  // cuda::Stream, CORTADO_KERNEL_LOOP, CORTADO_LAUNCH
#include "cortado/kernels/dense.hpp"   // FirstBadLabelGpu
#include "cortado/kernels/zoo.hpp"

namespace cortado {

namespace {

using cuda::kLossBlocks;
using cuda::LabelOf;
using cuda::PartialCount;
using cuda::PartialLoss;
using cuda::StoreLossPartials;
static_assert(cuda::kLossWorkUsed <= kInfogainWorkFloats, "the loss scratch is too small");

__global__ void InfogainPartialsKernel(int64_t positions, int64_t channels, int64_t inner, const float* prob,
                                       const float* label, const float* h, bool has_ignore, int ignore_label,
                                       double* partial_loss, double* partial_count, unsigned* flag) {
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
    for (int64_t c = 0; c < channels; ++c)
      loss -= static_cast<double>(h[l * channels + c]) *
              logf(fmaxf(prob[(i * channels + c) * inner + j], kInfogainLogThreshold));
    count += 1;
  }
  StoreLossPartials(loss, count, partial_loss, partial_count);
}

__global__ void InfogainRowSumsKernel(int64_t channels, const float* h, float* row_sums) {
  CORTADO_KERNEL_LOOP(r, channels) {
    float sum = 0;
    for (int64_t c = 0; c < channels; ++c) sum += h[r * channels + c];
    row_sums[r] = sum;
  }
}

__global__ void InfogainBackwardKernel(int64_t n, int64_t channels, int64_t inner, const float* prob,
                                       const float* label, const float* h, const float* row_sums, bool has_ignore,
                                       int ignore_label, const float* dloss, const float* normalizer, float* dx) {
  const float scale = dloss[0] / normalizer[0];
  CORTADO_KERNEL_LOOP(k, n) {
    const int64_t i = k / (channels * inner), c = k / inner % channels, j = k % inner;
    const int l = LabelOf(label[i * inner + j]);
    if ((has_ignore && l == ignore_label) || l < 0 || l >= channels) {  // the forward pass refused bad labels
      dx[k] = 0.0f;
    } else {
      dx[k] = scale * (prob[k] * row_sums[l] - h[l * channels + c]);
    }
  }
}

}  // namespace

int64_t InfogainLossForwardGpu(Context& ctx, int64_t outer, int64_t channels, int64_t inner, const float* prob,
                               const float* label, const float* h, bool has_ignore, int ignore_label,
                               bool by_valid_count, double normalizer, float* work, float* loss,
                               float* bad_value_host) {
  const cudaStream_t stream = cuda::Stream(ctx);
  double* partial_loss = PartialLoss(work);
  double* partial_count = PartialCount(work);
  unsigned* flag = cuda::LossFlag(work);
  CORTADO_CUDA_CHECK(cudaMemsetAsync(flag, 0xff, sizeof(unsigned), stream));
  CORTADO_LAUNCH(InfogainPartialsKernel, kLossBlocks, cuda::kThreads, 0, stream, outer * inner, channels, inner, prob,
                 label, h, has_ignore, ignore_label, partial_loss, partial_count, flag);
  cuda::QueueLossFinish(ctx, work, by_valid_count, normalizer, loss);
  return FirstBadLabelGpu(ctx, work + cuda::kLossFlag, label, bad_value_host);
}

void InfogainRowSumsGpu(Context& ctx, int64_t channels, const float* h, float* row_sums) {
  if (channels == 0) return;
  CORTADO_LAUNCH(InfogainRowSumsKernel, cuda::BlocksFor(channels), cuda::kThreads, 0, cuda::Stream(ctx), channels, h,
                 row_sums);
}

void InfogainLossBackwardGpu(Context& ctx, int64_t outer, int64_t channels, int64_t inner, const float* prob,
                             const float* label, const float* h, const float* row_sums, bool has_ignore,
                             int ignore_label, const float* dloss, const float* work, float* dx) {
  const int64_t n = outer * channels * inner;
  if (n == 0) return;
  CORTADO_LAUNCH(InfogainBackwardKernel, cuda::BlocksFor(n), cuda::kThreads, 0, cuda::Stream(ctx), n, channels, inner,
                 prob, label, h, row_sums, has_ignore, ignore_label, dloss, work + cuda::kLossNormalizer, dx);
}

}  // namespace cortado
