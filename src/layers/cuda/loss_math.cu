// loss_math.cu — the GPU side of loss_math.hpp's shared pieces (the terms of each loss are instantiated
// beside the loss), and FirstBadLabelGpu (declared there too), the read-back of a bad-label flag that the
// losses, Accuracy, Embed and BatchReindex share.
#include "../loss_math.hpp"  // FirstBadLabelGpu
#include "cortado/cuda/for_each.cuh"
#include "cortado/cuda/resources.hpp"  // cuda::Stream, CORTADO_CUDA_CHECK

namespace cortado {

CORTADO_GPU_FOR_EACH(loss::ClearFlag);

int64_t FirstBadLabelGpu(Context& ctx, const float* flag, const float* labels, float* value_host) {
  if (value_host == nullptr) return -1;
  const cudaStream_t stream = cuda::Stream(ctx);
  unsigned first = loss::kNoBadLabel;
  CORTADO_CUDA_CHECK(cudaMemcpyAsync(&first, flag, sizeof first, cudaMemcpyDeviceToHost, stream));
  CORTADO_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (first == loss::kNoBadLabel) return -1;
  CORTADO_CUDA_CHECK(cudaMemcpyAsync(value_host, labels + first, sizeof(float), cudaMemcpyDeviceToHost, stream));
  CORTADO_CUDA_CHECK(cudaStreamSynchronize(stream));
  return first;
}

}  // namespace cortado
