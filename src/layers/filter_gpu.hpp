// filter_gpu.hpp — launchers of Filter's GPU kernels and copies (cuda/filter.cu). No CUDA types, so
// filter.cpp calls them from Forward_gpu / Backward_gpu (CORTADO_GPU_ONLY: in a CPU-only build each
// throws). Every pointer is a device pointer unless its name says host; everything runs on the
// context's compute stream without waiting, except the function that says it waits.
#pragma once

#include <cstdint>
#include <vector>

#include "cortado/context.hpp"
#include "cortado/kernels/for_each.hpp"  // CORTADO_GPU_ONLY

namespace cortado {

// Copies n selector values to the host (waits).
CORTADO_GPU_ONLY(void FilterReadSelectorGpu(Context& ctx, int64_t n, const float* selector, float* selector_host))
// Copies the host row maps to `maps` (2·num ints): maps[0, selected) = the bottom row of each top
// row, maps[num, 2·num) = the top row of each bottom row or −1. Queued; the host vector may change
// once this returns.
CORTADO_GPU_ONLY(void FilterUploadMapsGpu(Context& ctx, const std::vector<int>& maps_host, int* maps))
// y row k (dim floats) = x row maps[k], for k < selected.
CORTADO_GPU_ONLY(void FilterForwardGpu(Context& ctx, int64_t selected, int64_t dim, const int* maps, const float* x,
                                       float* y))
// dx row r = dy row maps[num + r], or zeros when that is −1; every row of dx is written.
CORTADO_GPU_ONLY(void FilterBackwardGpu(Context& ctx, int64_t num, int64_t dim, const int* maps, const float* dy,
                                        float* dx))

}  // namespace cortado
