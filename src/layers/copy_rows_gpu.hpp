// copy_rows_gpu.hpp — the strided row copy behind Concat, Slice and SPP on the GPU (cuda/concat.cu).
// No CUDA types, so the layers' .cpp files call it from Forward_gpu / Backward_gpu (CORTADO_GPU_ONLY:
// in a CPU-only build it throws). Every pointer is a device pointer; it runs on the context's compute
// stream without waiting.
#pragma once

#include <cstdint>

#include "cortado/context.hpp"
#include "cortado/kernels/for_each.hpp"  // CORTADO_GPU_ONLY

namespace cortado {

// rows × len values: dst[r·dst_stride + j] = src[r·src_stride + j] for r < rows, j < len.
CORTADO_GPU_ONLY(void CopyRowsGpu(Context& ctx, int64_t rows, int64_t len, const float* src, int64_t src_stride,
                                  float* dst, int64_t dst_stride))

}  // namespace cortado
