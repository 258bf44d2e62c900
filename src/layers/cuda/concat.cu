// concat.cu — the strided row copy behind Concat and Slice (copy_rows_gpu.hpp): both move `outer`
// rows of one blob's axis slab between a bottom and a top whose rows have different lengths.
#include "../copy_rows_gpu.hpp"
#include "cortado/cuda/resources.hpp"  // cuda::Stream, CORTADO_KERNEL_LOOP, CORTADO_CUDA_CHECK

namespace cortado {

namespace {

__global__ void CopyRowsKernel(int64_t total, int64_t len, const float* src, int64_t src_stride, float* dst,
                               int64_t dst_stride) {
  CORTADO_KERNEL_LOOP(i, total) {
    const int64_t r = i / len, j = i - r * len;
    dst[r * dst_stride + j] = src[r * src_stride + j];
  }
}

}  // namespace

void CopyRowsGpu(Context& ctx, int64_t rows, int64_t len, const float* src, int64_t src_stride, float* dst,
                 int64_t dst_stride) {
  if (rows == 0 || len == 0) return;
  if (rows == 1 || (src_stride == len && dst_stride == len)) {  // one contiguous block
    CORTADO_CUDA_CHECK(
        cudaMemcpyAsync(dst, src, rows * len * sizeof(float), cudaMemcpyDeviceToDevice, cuda::Stream(ctx)));
    return;
  }
  const int64_t total = rows * len;
  CORTADO_LAUNCH(CopyRowsKernel, cuda::BlocksFor(total), cuda::kThreads, 0, cuda::Stream(ctx), total, len, src,
                 src_stride, dst, dst_stride);
}

}  // namespace cortado
