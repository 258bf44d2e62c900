// losses.cu — the kernels of SigmoidCrossEntropyLoss, ContrastiveLoss, HingeLoss and
// MultinomialLogisticLoss (kernels/loss.hpp), each summed in a fixed order with loss_sums.cuh (whose
// QueueLossFinish is defined here), so the same inputs give the same loss and nothing waits but a
// check of labels.
#include <cfloat>

#include "cortado/cuda/loss_sums.cuh"  // kLossBlocks, LabelOf, StoreLossPartials, QueueLossFinish
#include "cortado/cuda/resources.hpp"  // cuda::Stream, CORTADO_KERNEL_LOOP, CORTADO_LAUNCH
#include "cortado/kernels/dense.hpp"   // FirstBadLabelGpu
#include "cortado/kernels/loss.hpp"

namespace cortado {

namespace {

using cuda::kLossBlocks;
using cuda::LabelOf;
using cuda::LossFlag;
using cuda::PartialCount;
using cuda::PartialLoss;
using cuda::StoreLossPartials;
static_assert(cuda::kLossWorkUsed <= kLossWorkFloats, "the loss scratch is too small");

}  // namespace

namespace cuda {

__global__ void LossFinishKernel(const double* partial_loss, const double* partial_count, bool by_count,
                                 double normalizer, float* normalizer_out, float* loss_out) {
  double loss = 0, count = 0;
  for (int b = 0; b < kLossBlocks; ++b) {
    loss += partial_loss[b];
    count += partial_count[b];
  }
  const double n = fmax(by_count ? count : normalizer, 1.0);
  *normalizer_out = static_cast<float>(n);
  *loss_out = static_cast<float>(loss / n);
}

void QueueLossFinish(Context& ctx, float* work, bool by_count, double normalizer, float* loss) {
  CORTADO_LAUNCH(LossFinishKernel, 1, 1, 0, Stream(ctx), PartialLoss(work), PartialCount(work), by_count, normalizer,
                 work + kLossNormalizer, loss);
}

}  // namespace cuda

namespace {

// ---- SigmoidCrossEntropyLoss ---------------------------------------------------------------------

__global__ void SigmoidCrossEntropyPartialsKernel(int64_t n, const float* x, const float* t, bool has_ignore,
                                                  int ignore_label, double* partial_loss, double* partial_count) {
  double loss = 0, count = 0;
  CORTADO_KERNEL_LOOP(i, n) {
    if (has_ignore && LabelOf(t[i]) == ignore_label) continue;
    loss += fmaxf(x[i], 0.0f) - x[i] * t[i] + log1pf(expf(-fabsf(x[i])));
    count += 1;
  }
  StoreLossPartials(loss, count, partial_loss, partial_count);
}

__global__ void SigmoidCrossEntropyBackwardKernel(int64_t n, const float* x, const float* t, bool has_ignore,
                                                  int ignore_label, const float* dloss, const float* normalizer,
                                                  float* dx) {
  const float scale = dloss[0] / normalizer[0];
  CORTADO_KERNEL_LOOP(i, n) {
    dx[i] = has_ignore && LabelOf(t[i]) == ignore_label ? 0.0f : scale * (1.0f / (1.0f + expf(-x[i])) - t[i]);
  }
}

// ---- ContrastiveLoss -----------------------------------------------------------------------------

// static_cast<int>(y) != 0, NaN and values outside int's range (INT_MIN) included.
__device__ __forceinline__ bool Similar(float y) { return !(y > -1.0f && y < 1.0f); }

__global__ void ContrastivePartialsKernel(int64_t num, int64_t channels, const float* a, const float* b,
                                          const float* y, float margin, bool legacy, float* dist_sq,
                                          double* partial_loss, double* partial_count) {
  double loss = 0;
  CORTADO_KERNEL_LOOP(i, num) {
    float d2 = 0;
    for (int64_t c = 0; c < channels; ++c) {
      const float d = a[i * channels + c] - b[i * channels + c];
      d2 += d * d;
    }
    dist_sq[i] = d2;
    if (Similar(y[i])) {
      loss += d2;
    } else if (legacy) {
      loss += fmaxf(margin - d2, 0.0f);
    } else {
      const float m = fmaxf(margin - sqrtf(d2), 0.0f);
      loss += m * m;
    }
  }
  StoreLossPartials(loss, 0.0, partial_loss, partial_count);
}

__global__ void ContrastiveBackwardKernel(int64_t num, int64_t channels, const float* a, const float* b,
                                          const float* y, const float* dist_sq, float margin, bool legacy,
                                          const float* dloss, float sign, float* dx) {
  const float alpha = sign * dloss[0] / static_cast<float>(num);
  CORTADO_KERNEL_LOOP(k, num * channels) {
    const int64_t i = k / channels;
    float scale;
    if (Similar(y[i])) {
      scale = alpha;
    } else if (legacy) {
      scale = margin - dist_sq[i] > 0.0f ? -alpha : 0.0f;
    } else {
      const float dist = sqrtf(dist_sq[i]);
      const float mdist = margin - dist;
      scale = mdist > 0.0f ? -alpha * mdist / (dist + 1e-4f) : 0.0f;
    }
    dx[k] = scale * (a[k] - b[k]);
  }
}

// ---- HingeLoss -----------------------------------------------------------------------------------

__global__ void HingePartialsKernel(int64_t num, int64_t dim, const float* x, const float* label, bool l2,
                                    double* partial_loss, double* partial_count, unsigned* flag) {
  double loss = 0;
  CORTADO_KERNEL_LOOP(k, num * dim) {
    const int64_t i = k / dim, j = k % dim;
    const int l = LabelOf(label[i]);
    if (l < 0 || l >= dim) {
      atomicMin(flag, static_cast<unsigned>(i));
      continue;
    }
    const float m = fmaxf(0.0f, 1.0f + (j == l ? -x[k] : x[k]));
    loss += l2 ? m * m : m;
  }
  StoreLossPartials(loss, 0.0, partial_loss, partial_count);
}

__global__ void HingeBackwardKernel(int64_t num, int64_t dim, const float* x, const float* label, bool l2,
                                    const float* dloss, float* dx) {
  const float scale = dloss[0] / static_cast<float>(num);
  CORTADO_KERNEL_LOOP(k, num * dim) {
    const int64_t i = k / dim, j = k % dim;
    const int l = LabelOf(label[i]);
    const float m = fmaxf(0.0f, 1.0f + (j == l ? -x[k] : x[k]));
    const float g = l2 ? 2.0f * m : (m > 0.0f ? 1.0f : 0.0f);
    dx[k] = (j == l ? -scale : scale) * g;
  }
}

// ---- MultinomialLogisticLoss ---------------------------------------------------------------------

__global__ void MultinomialPartialsKernel(int64_t num, int64_t dim, const float* prob, const float* label,
                                          double* partial_loss, double* partial_count, unsigned* flag) {
  double loss = 0;
  CORTADO_KERNEL_LOOP(i, num) {
    const int l = LabelOf(label[i]);
    if (l < 0 || l >= dim) {
      atomicMin(flag, static_cast<unsigned>(i));
      continue;
    }
    loss -= logf(fmaxf(prob[i * dim + l], kMultinomialLogThreshold));
  }
  StoreLossPartials(loss, 0.0, partial_loss, partial_count);
}

__global__ void MultinomialBackwardKernel(int64_t num, int64_t dim, const float* prob, const float* label,
                                          const float* dloss, float* dprob) {
  const float scale = -dloss[0] / static_cast<float>(num);
  CORTADO_KERNEL_LOOP(k, num * dim) {
    const int64_t i = k / dim, j = k % dim;
    dprob[k] = j == LabelOf(label[i]) ? scale / fmaxf(prob[k], kMultinomialLogThreshold) : 0.0f;
  }
}

}  // namespace

void SigmoidCrossEntropyLossForwardGpu(Context& ctx, int64_t n, const float* x, const float* t, bool has_ignore,
                                       int ignore_label, bool by_valid_count, double normalizer, float* work,
                                       float* loss) {
  CORTADO_LAUNCH(SigmoidCrossEntropyPartialsKernel, kLossBlocks, cuda::kThreads, 0, cuda::Stream(ctx), n, x, t,
                 has_ignore, ignore_label, PartialLoss(work), PartialCount(work));
  cuda::QueueLossFinish(ctx, work, by_valid_count, normalizer, loss);
}

void SigmoidCrossEntropyLossBackwardGpu(Context& ctx, int64_t n, const float* x, const float* t, bool has_ignore,
                                        int ignore_label, const float* dloss, const float* work, float* dx) {
  if (n == 0) return;
  CORTADO_LAUNCH(SigmoidCrossEntropyBackwardKernel, cuda::BlocksFor(n), cuda::kThreads, 0, cuda::Stream(ctx), n, x, t,
                 has_ignore, ignore_label, dloss, work + cuda::kLossNormalizer, dx);
}

void ContrastiveLossForwardGpu(Context& ctx, int64_t num, int64_t channels, const float* a, const float* b,
                               const float* y, float margin, bool legacy, float* dist_sq, float* work, float* loss) {
  CORTADO_LAUNCH(ContrastivePartialsKernel, kLossBlocks, cuda::kThreads, 0, cuda::Stream(ctx), num, channels, a, b, y,
                 margin, legacy, dist_sq, PartialLoss(work), PartialCount(work));
  cuda::QueueLossFinish(ctx, work, false, 2.0 * static_cast<double>(num), loss);
}

void ContrastiveLossBackwardGpu(Context& ctx, int64_t num, int64_t channels, const float* a, const float* b,
                                const float* y, const float* dist_sq, float margin, bool legacy,
                                const float* dloss, float sign, float* dx) {
  const int64_t n = num * channels;
  if (n == 0) return;
  CORTADO_LAUNCH(ContrastiveBackwardKernel, cuda::BlocksFor(n), cuda::kThreads, 0, cuda::Stream(ctx), num, channels, a,
                 b, y, dist_sq, margin, legacy, dloss, sign, dx);
}

int64_t HingeLossForwardGpu(Context& ctx, int64_t num, int64_t dim, const float* x, const float* label, bool l2,
                            float* work, float* loss, float* bad_value_host) {
  const cudaStream_t stream = cuda::Stream(ctx);
  CORTADO_CUDA_CHECK(cudaMemsetAsync(LossFlag(work), 0xff, sizeof(unsigned), stream));
  CORTADO_LAUNCH(HingePartialsKernel, kLossBlocks, cuda::kThreads, 0, stream, num, dim, x, label, l2, PartialLoss(work),
                 PartialCount(work), LossFlag(work));
  cuda::QueueLossFinish(ctx, work, false, static_cast<double>(num), loss);
  return FirstBadLabelGpu(ctx, work + cuda::kLossFlag, label, bad_value_host);
}

void HingeLossBackwardGpu(Context& ctx, int64_t num, int64_t dim, const float* x, const float* label, bool l2,
                          const float* dloss, float* dx) {
  const int64_t n = num * dim;
  if (n == 0) return;
  CORTADO_LAUNCH(HingeBackwardKernel, cuda::BlocksFor(n), cuda::kThreads, 0, cuda::Stream(ctx), num, dim, x, label, l2,
                 dloss, dx);
}

int64_t MultinomialLogisticLossForwardGpu(Context& ctx, int64_t num, int64_t dim, const float* prob,
                                          const float* label, float* work, float* loss, float* bad_value_host) {
  const cudaStream_t stream = cuda::Stream(ctx);
  CORTADO_CUDA_CHECK(cudaMemsetAsync(LossFlag(work), 0xff, sizeof(unsigned), stream));
  CORTADO_LAUNCH(MultinomialPartialsKernel, kLossBlocks, cuda::kThreads, 0, stream, num, dim, prob, label,
                 PartialLoss(work), PartialCount(work), LossFlag(work));
  cuda::QueueLossFinish(ctx, work, false, static_cast<double>(num), loss);
  return FirstBadLabelGpu(ctx, work + cuda::kLossFlag, label, bad_value_host);
}

void MultinomialLogisticLossBackwardGpu(Context& ctx, int64_t num, int64_t dim, const float* prob,
                                        const float* label, const float* dloss, float* dprob) {
  const int64_t n = num * dim;
  if (n == 0) return;
  CORTADO_LAUNCH(MultinomialBackwardKernel, cuda::BlocksFor(n), cuda::kThreads, 0, cuda::Stream(ctx), num, dim, prob,
                 label, dloss, dprob);
}

}  // namespace cortado
