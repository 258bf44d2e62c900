// dummy_data_gpu.hpp — how DummyData's host-filled tops reach the device (cuda/dummy_data.cu); MemoryData
// uploads its batches the same way. No CUDA types, so the layers' .cpp files call it from Forward_gpu
// (CORTADO_GPU_ONLY: in a CPU-only build it throws). `device` is a device pointer, `host` a host one.
#pragma once

#include <cstdint>

#include "cortado/context.hpp"
#include "cortado/kernels/for_each.hpp"  // CORTADO_GPU_ONLY

namespace cortado {

// Copies n host values into device memory in order with the compute stream (after the work queued
// before it) and waits until the copy is done, so the host buffer may be freed.
CORTADO_GPU_ONLY(void UploadAndWait(Context& ctx, int64_t n, const float* host, float* device))

}  // namespace cortado
