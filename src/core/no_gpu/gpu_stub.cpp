// gpu_stub.cpp — the device services of a CPU-only build: there is no GPU, and asking for one is a
// clear error rather than a crash.
#include <cstdlib>

#include "cortado/error.hpp"
#include "cortado/gpu.hpp"

namespace cortado {

int GpuCount() { return 0; }
bool BuiltWithCuda() { return false; }
void* GpuAllocate(size_t) { Fail("this build of Cortado has no GPU support (rebuild with CUDA)"); }
void GpuFree(void*) {}

void* HostAllocate(size_t bytes, bool* pinned) {
  *pinned = false;
  void* pointer = std::malloc(bytes);
  if (pointer == nullptr) Fail("out of host memory: cannot allocate ", bytes, " bytes");
  return pointer;
}

void HostFree(void* pointer, bool) { std::free(pointer); }

}  // namespace cortado
