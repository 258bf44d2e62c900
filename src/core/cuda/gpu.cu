// gpu.cu — the device services of a CUDA build: device count and the arena's one allocation.
#include <cuda_runtime.h>

#include <string>

#include "cortado/error.hpp"
#include "cortado/gpu.hpp"

namespace cortado {

int GpuCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device" status
    return 0;
  }
  return count;
}

bool BuiltWithCuda() { return true; }

void* GpuAllocate(size_t bytes) {
  void* pointer = nullptr;
  const cudaError_t status = cudaMalloc(&pointer, bytes);
  if (status != cudaSuccess) {
    cudaGetLastError();
    Fail("out of GPU memory: cudaMalloc(", bytes, " bytes) failed: ", cudaGetErrorString(status));
  }
  cudaMemset(pointer, 0, bytes);  // the arena starts zeroed, as on the host
  return pointer;
}

void GpuFree(void* pointer) { cudaFree(pointer); }

}  // namespace cortado
