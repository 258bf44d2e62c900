// gpu.hpp — the device services the core needs, without CUDA types. A CUDA build implements them in
// src/core/cuda/; a CPU-only build links src/core/no_gpu/, whose versions say clearly that the GPU
// path is missing. CUDA sources use the fuller API of cortado/cuda/ (streams, handles, kernels).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace cortado {

int GpuCount();                      // 0 in a CPU-only build or on a machine without a GPU
bool BuiltWithCuda();

// The arena's device memory: one cudaMalloc, zeroed. Throws Error (out of GPU memory) when impossible.
void* GpuAllocate(size_t bytes);
void GpuFree(void* pointer);
// Device allocations made so far through GpuAllocate: each net's arena (cuDNN's workspace is carved
// from it), and per GPU context cuBLAS's workspace, the StepInputs block and gpu_all_finite's
// counter. The test that steps allocate nothing also watches the device's free memory
// (GpuFreeMemory) across steps.
int64_t GpuAllocationCount();
// Free memory on the current device, in bytes, as the driver reports it.
size_t GpuFreeMemory();

// Copies `bytes` between any two of host and device memory, after all queued GPU work, and waits for
// the copy (unified addressing tells the direction). For set-up, snapshots and the numbers a person reads — never
// inside a step's hot path.
void GpuCopy(void* destination, const void* source, size_t bytes);

// device_query: a few lines describing GPU `id` (name, compute capability, memory, SMs, clocks).
std::string GpuProperties(int id);

// Streams and library handles of one device, owned by a Context (cortado/cuda/resources.hpp has the
// definition). Creating them selects the device; throws Error without CUDA or without that GPU.
struct GpuResources;
std::shared_ptr<GpuResources> CreateGpuResources(int device_id);
// Waits until everything queued on the resources' streams has finished; reports a failed kernel.
void GpuSynchronize(GpuResources& resources);
// Whether the device has TF32 tensor cores (compute capability 8.0 or newer, and NVIDIA_TF32_OVERRIDE
// is not 0); lets cuBLAS use them for single-precision products, or forbids it.
bool GpuHasTf32(const GpuResources& resources);
void GpuSetTf32(GpuResources& resources, bool tf32);

// Host memory for buffers the GPU copies from (data batches): page-locked when a GPU is present, so
// copies run asynchronously at full speed; ordinary memory otherwise. Free it with HostFree and the
// same `pinned` value.
void* HostAllocate(size_t bytes, bool* pinned);
void HostFree(void* pointer, bool pinned);

}  // namespace cortado
