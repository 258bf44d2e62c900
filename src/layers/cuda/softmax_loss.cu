// softmax_loss.cu — SoftmaxWithLoss's kernels (kernels/dense.hpp), and the label check it shares with
// Accuracy. The loss is summed in double in a fixed order (each of kBlocks blocks reduces its share,
// then one thread adds the partials), so it is the same from run to run; the normalizer stays on the
// device for the backward pass, so nothing waits but the check of the labels.
//
// work (kSoftmaxLossWorkFloats floats): kBlocks doubles of partial losses, kBlocks doubles of partial
// counts, then the normalizer (a float) and the bad-label flag (the first bad position, unsigned).
#include <cub/block/block_reduce.cuh>

#include <cfloat>
#include <climits>

#include "cortado/cuda/resources.hpp"  // cuda::Stream, CORTADO_KERNEL_LOOP, CORTADO_CUDA_LAUNCH_CHECK
#include "cortado/kernels/dense.hpp"

namespace cortado {

namespace {

constexpr int kBlocks = 128;
constexpr int kNormalizer = 4 * kBlocks;  // float index of the normalizer in work
constexpr int kFlag = kNormalizer + 1;    // float index of the bad-label flag
static_assert(kFlag < kSoftmaxLossWorkFloats, "the loss scratch is too small");
constexpr unsigned kNoBadLabel = 0xffffffffu;  // the flag's value when every label is valid

// static_cast<int>(v) as x86 does it: NaN and values outside int's range give INT_MIN.
__device__ __forceinline__ int LabelOf(float v) {
  return v >= -2147483648.0f && v < 2147483648.0f ? static_cast<int>(v) : INT_MIN;
}

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
  using Reduce = cub::BlockReduce<double, cuda::kThreads>;
  __shared__ typename Reduce::TempStorage storage;
  const double block_loss = Reduce(storage).Sum(loss);
  __syncthreads();  // the storage is reused
  const double block_count = Reduce(storage).Sum(count);
  if (threadIdx.x == 0) {
    partial_loss[blockIdx.x] = block_loss;
    partial_count[blockIdx.x] = block_count;
  }
}

__global__ void LossFinishKernel(const double* partial_loss, const double* partial_count, bool by_valid_count,
                                 double normalizer, float* normalizer_out, float* loss_out) {
  double loss = 0, count = 0;
  for (int b = 0; b < kBlocks; ++b) {
    loss += partial_loss[b];
    count += partial_count[b];
  }
  const double n = fmax(by_valid_count ? count : normalizer, 1.0);
  *normalizer_out = static_cast<float>(n);
  *loss_out = static_cast<float>(loss / n);
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
  double* partial_loss = reinterpret_cast<double*>(work);  // work is 64-byte aligned (an arena region)
  double* partial_count = partial_loss + kBlocks;
  unsigned* flag = reinterpret_cast<unsigned*>(work + kFlag);
  CORTADO_CUDA_CHECK(cudaMemsetAsync(flag, 0xff, sizeof(unsigned), stream));
  LossPartialsKernel<<<kBlocks, cuda::kThreads, 0, stream>>>(outer * inner, channels, inner, prob, label, has_ignore,
                                                              ignore_label, partial_loss, partial_count, flag);
  CORTADO_CUDA_LAUNCH_CHECK();
  LossFinishKernel<<<1, 1, 0, stream>>>(partial_loss, partial_count, by_valid_count, normalizer,
                                        work + kNormalizer, loss);
  CORTADO_CUDA_LAUNCH_CHECK();
  return FirstBadLabelGpu(ctx, work + kFlag, label, bad_value_host);
}

void SoftmaxLossBackwardGpu(Context& ctx, int64_t outer, int64_t channels, int64_t inner, const float* prob,
                            const float* label, bool has_ignore, int ignore_label, const float* dloss,
                            const float* work, float* dx) {
  const int64_t n = outer * channels * inner;
  if (n == 0) return;
  LossBackwardKernel<<<cuda::BlocksFor(n), cuda::kThreads, 0, cuda::Stream(ctx)>>>(
      n, channels, inner, prob, label, has_ignore, ignore_label, dloss, work + kNormalizer, dx);
  CORTADO_CUDA_LAUNCH_CHECK();
}

}  // namespace cortado
