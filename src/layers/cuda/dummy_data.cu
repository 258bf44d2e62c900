// dummy_data.cu — DummyData's host-filled tops reach the device (dummy_data_gpu.hpp): one copy on the
// compute stream, so it follows the work that still reads the top, then a wait so the host buffer
// may go.
#include "../dummy_data_gpu.hpp"
#include "cortado/cuda/resources.hpp"  // cuda::Stream, CORTADO_CUDA_CHECK

namespace cortado {

void UploadAndWait(Context& ctx, int64_t n, const float* host, float* device) {
  if (n == 0) return;
  const cudaStream_t stream = cuda::Stream(ctx);
  CORTADO_CUDA_CHECK(cudaMemcpyAsync(device, host, n * sizeof(float), cudaMemcpyHostToDevice, stream));
  CORTADO_CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace cortado
