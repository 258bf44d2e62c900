// gpu_stub.cpp — the device services of a CPU-only build: there is no GPU, and asking for one is a
// clear error rather than a crash.
#include <cstdlib>

#include "cortado/error.hpp"
#include "cortado/gpu.hpp"

namespace cortado {

namespace {
[[noreturn]] void NoCuda() { Fail("this build of Cortado has no GPU support (rebuild with the CUDA toolkit)"); }
}  // namespace

int GpuCount() { return 0; }
bool BuiltWithCuda() { return false; }
void* GpuAllocate(size_t) { NoCuda(); }
void GpuFree(void*) {}
int64_t GpuAllocationCount() { return 0; }
size_t GpuFreeMemory() { return 0; }
void GpuCopy(void*, const void*, size_t) { NoCuda(); }
std::string GpuProperties(int) { NoCuda(); }
std::shared_ptr<GpuResources> CreateGpuResources(int) { NoCuda(); }
void GpuSynchronize(GpuResources&) { NoCuda(); }
bool GpuHasTf32(const GpuResources&) { return false; }
void GpuSetTf32(GpuResources&, bool) { NoCuda(); }

void* HostAllocate(size_t bytes, bool* pinned) {
  *pinned = false;
  void* pointer = std::malloc(bytes);
  if (pointer == nullptr) Fail("out of host memory: cannot allocate ", bytes, " bytes");
  return pointer;
}

void HostFree(void* pointer, bool) { std::free(pointer); }

}  // namespace cortado
