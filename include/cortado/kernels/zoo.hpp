// kernels/zoo.hpp — launchers of the GPU code behind Embed, MVN, Filter, BatchReindex and
// InfogainLoss (Parameter needs none: it is gpu_copy and gpu_axpy). No CUDA types, so the layers'
// .cpp files call them from Forward_gpu / Backward_gpu; each is defined in src/layers/cuda/<layer>.cu
// (CORTADO_GPU_ONLY: in a CPU-only build each throws). Every pointer is a device
// pointer unless its name says host; everything runs on the context's compute stream without
// waiting, except the functions that say they wait.
//
// `flag` is one device word (a float's room holding an unsigned) in which a kernel marks the first
// bad position; FirstBadLabelGpu (kernels/dense.hpp) reads it back.
#pragma once

#include <cstdint>
#include <vector>

#include "cortado/context.hpp"
#include "cortado/kernels/for_each.hpp"  // CORTADO_GPU_ONLY

namespace cortado {

// ---- Embed (embed.cu) ----------------------------------------------------------------------------
// x: m indices; w: (k, n); b: n or null. y (m, n): row i = w[x_i] (+ b). An index that is not an
// integer in [0, k) gives a row of zeros and marks its position in flag. Waits for the GPU to check
// the indices: returns the first bad position (its value in *bad_value_host), or −1.
CORTADO_GPU_ONLY(int64_t EmbedForwardGpu(Context& ctx, int64_t m, int64_t n, int64_t k, const float* x, const float* w,
                                         const float* b, float* y, float* flag, float* bad_value_host))
// dw[x_i] += dy_i for every i (atomicAdd: repeated indices are summed in no fixed order).
CORTADO_GPU_ONLY(void EmbedWeightGradientGpu(Context& ctx, int64_t m, int64_t n, int64_t k, const float* x,
                                             const float* dy, float* dw))

// ---- MVN (mvn.cu) --------------------------------------------------------------------------------
// x, y: rows × dim. Per row: mean = Σx / dim, y = x − mean; with normalize_variance also
// s = sqrt(Σ y² / dim) + eps, y /= s, and scale[row] = s (kept for Backward). Sums in double. y may
// be x (one block owns one row and reads it whole before writing).
CORTADO_GPU_ONLY(void MVNForwardGpu(Context& ctx, int64_t rows, int64_t dim, bool normalize_variance, float eps,
                                    const float* x, float* y, float* scale))
// normalize_variance: dx = (dy − (Σ(y·dy)·y + Σdy) / dim) / scale[row]  (Caffe's MVN gradient);
// otherwise dx = dy − Σdy / dim. dx may be dy.
CORTADO_GPU_ONLY(void MVNBackwardGpu(Context& ctx, int64_t rows, int64_t dim, bool normalize_variance, const float* y,
                                     const float* dy, const float* scale, float* dx))

// ---- Filter (filter.cu) --------------------------------------------------------------------------
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

// ---- BatchReindex (batch_reindex.cu) -------------------------------------------------------------
// x: (num, dim); idx: count indices. y row k = x row static_cast<int>(idx[k]). An index outside
// [0, num) (or NaN) gives a row of zeros and marks k in flag. Waits for the GPU to check the
// indices: returns the first bad position (its value in *bad_value_host), or −1.
CORTADO_GPU_ONLY(int64_t BatchReindexForwardGpu(Context& ctx, int64_t num, int64_t count, int64_t dim, const float* idx,
                                                const float* x, float* y, float* flag, float* bad_value_host))
// dx row n = Σ over k with static_cast<int>(idx[k]) == n of dy row k, summed in increasing k (the
// CPU's order; no atomics); every element of dx is written.
CORTADO_GPU_ONLY(void BatchReindexBackwardGpu(Context& ctx, int64_t num, int64_t count, int64_t dim, const float* idx,
                                              const float* dy, float* dx))

// ---- InfogainLoss (infogain_loss.cu) -------------------------------------------------------------
// Floats of the scratch the InfogainLoss kernels share between forward and backward (block partial
// sums, the normalizer, the bad-label flag).
constexpr int64_t kInfogainWorkFloats = 1024;
// The smallest probability whose log is taken (Caffe's kLOG_THRESHOLD).
constexpr float kInfogainLogThreshold = 1e-20f;
// prob: (outer, channels, inner); label: outer·inner; h: channels × channels. Writes
// *loss = −Σ_positions Σ_c h[l][c]·log(max(prob_c, 1e-20)) / n (summed in double in a fixed order),
// where l is the position's label and n is the count of positions not ignored when by_valid_count,
// else `normalizer`; n is at least 1 and is kept in work. Waits for the GPU to check the labels:
// returns the first position with a label outside [0, channels) (its value in *bad_value_host), or −1.
CORTADO_GPU_ONLY(int64_t InfogainLossForwardGpu(Context& ctx, int64_t outer, int64_t channels, int64_t inner,
                                                const float* prob, const float* label, const float* h, bool has_ignore,
                                                int ignore_label, bool by_valid_count, double normalizer, float* work,
                                                float* loss, float* bad_value_host))
// row_sums[r] = Σ_c h[r][c], summed in float in increasing c (as the CPU).
CORTADO_GPU_ONLY(void InfogainRowSumsGpu(Context& ctx, int64_t channels, const float* h, float* row_sums))
// dx = (prob · row_sums[l] − h[l][c]) · (dloss[0] / n) with the forward's n; 0 at ignored positions.
CORTADO_GPU_ONLY(void InfogainLossBackwardGpu(Context& ctx, int64_t outer, int64_t channels, int64_t inner,
                                              const float* prob, const float* label, const float* h,
                                              const float* row_sums, bool has_ignore, int ignore_label,
                                              const float* dloss, const float* work, float* dx))

}  // namespace cortado
