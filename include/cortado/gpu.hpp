// gpu.hpp — the few device services the core needs. A CUDA build implements them in src/core/cuda/;
// a CPU-only build links src/core/no_gpu/, whose versions say clearly that the GPU path is missing.
#pragma once

#include <cstddef>

namespace cortado {

int GpuCount();                      // 0 in a CPU-only build or on a machine without a GPU
void* GpuAllocate(size_t bytes);     // throws Error when impossible
void GpuFree(void* pointer);
bool BuiltWithCuda();

// Host memory for buffers the GPU copies from (data batches): page-locked when a GPU is present, so
// copies run asynchronously at full speed; ordinary memory otherwise. Free it with HostFree and the
// same `pinned` value.
void* HostAllocate(size_t bytes, bool* pinned);
void HostFree(void* pointer, bool pinned);

}  // namespace cortado
