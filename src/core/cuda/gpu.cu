// gpu.cu — the device services of a CUDA build: device count and the arena's one allocation.
#include <cuda_runtime.h>

#include <cstdlib>
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

void* HostAllocate(size_t bytes, bool* pinned) {
  void* pointer = nullptr;
  *pinned = GpuCount() > 0 && cudaHostAlloc(&pointer, bytes, cudaHostAllocDefault) == cudaSuccess;
  if (*pinned) return pointer;
  cudaGetLastError();
  pointer = std::malloc(bytes);
  if (pointer == nullptr) Fail("out of host memory: cannot allocate ", bytes, " bytes");
  return pointer;
}

void HostFree(void* pointer, bool pinned) {
  if (pinned) {
    cudaFreeHost(pointer);
  } else {
    std::free(pointer);
  }
}

}  // namespace cortado
