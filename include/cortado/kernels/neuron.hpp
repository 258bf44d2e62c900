// kernels/neuron.hpp — launchers of the GPU kernels behind some element-wise and structural layers
// (Dropout, Concat/Slice, Eltwise, EuclideanLoss, DummyData); the neuron layers' arithmetic is
// src/layers/neuron_math.hpp, shared by both devices. No CUDA types, so the layers' .cpp files call
// them from Forward_gpu / Backward_gpu; each is defined in src/layers/cuda/<layer>.cu (CORTADO_GPU_ONLY:
// in a CPU-only build each throws). Every pointer is a device pointer
// unless its name says host; everything runs on the context's compute stream without waiting, except
// UploadAndWait.
#pragma once

#include <cstdint>

#include "cortado/context.hpp"
#include "cortado/kernels/for_each.hpp"  // CORTADO_GPU_ONLY

namespace cortado {

// ---- Dropout (dropout.cu) --------------------------------------------------------------------------
// mask[i] = (u_i ≥ threshold ? scale : 0) and y[i] = x[i]·mask[i], where u_i is a 32-bit hash of
// (*seed, i), seed a device word (counter-based: the same seed gives the same mask). y may be x.
CORTADO_GPU_ONLY(void DropoutForwardGpu(Context& ctx, int64_t n, const uint64_t* seed, uint64_t threshold, float scale,
                                        const float* x, float* mask, float* y))

// ---- Concat and Slice (concat.cu) ------------------------------------------------------------------
// rows × len values: dst[r·dst_stride + j] = src[r·src_stride + j] for r < rows, j < len.
CORTADO_GPU_ONLY(void CopyRowsGpu(Context& ctx, int64_t rows, int64_t len, const float* src, int64_t src_stride,
                                  float* dst, int64_t dst_stride))

// ---- Eltwise MAX (eltwise.cu) ----------------------------------------------------------------------
// One step of the running maximum over bottoms: where x > y, y = x and mask = k (ties keep the earlier
// bottom). Backward for bottom k: dx = mask == k ? dy : 0.
CORTADO_GPU_ONLY(void EltwiseMaxStepGpu(Context& ctx, int64_t n, const float* x, int k, float* y, float* mask))
CORTADO_GPU_ONLY(void EltwiseMaxBackwardGpu(Context& ctx, int64_t n, const float* mask, int k, const float* dy,
                                            float* dx))

// ---- EuclideanLoss (euclidean_loss.cu) -------------------------------------------------------------
// *loss = Σ (a − b)² / divisor (accumulated in double, in a fixed order: deterministic).
CORTADO_GPU_ONLY(void EuclideanLossForwardGpu(Context& ctx, int64_t n, const float* a, const float* b, double divisor,
                                              float* loss))
// d = sign · (*dloss / divisor) · (a − b), sign ±1; dloss is the loss top's diff (on the device).
CORTADO_GPU_ONLY(void EuclideanLossBackwardGpu(Context& ctx, int64_t n, const float* a, const float* b,
                                               const float* dloss, float divisor, float sign, float* d))

// ---- DummyData (dummy_data.cu) ---------------------------------------------------------------------
// Copies n host values into device memory in order with the compute stream (after the work queued
// before it) and waits until the copy is done, so the host buffer may be freed.
CORTADO_GPU_ONLY(void UploadAndWait(Context& ctx, int64_t n, const float* host, float* device))

}  // namespace cortado
