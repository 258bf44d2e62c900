// kernels/dense.hpp — launchers of the GPU code behind the dense layers (InnerProduct needs none:
// it is all gpu_gemm), Softmax, SoftmaxWithLoss, Accuracy, Pooling and Convolution. No CUDA types, so
// the layers' .cpp files call them from Forward_gpu / Backward_gpu; each is defined in
// src/layers/cuda/<layer>.cu (the cuDNN convolution in src/layers/cudnn/convolution_cudnn.cpp; in a
// CPU-only build CORTADO_GPU_ONLY gives each launcher a body that throws, and no_gpu/cudnn_stub.cpp
// stands in for cuDNN). Every pointer is a device pointer
// unless its name says host; everything runs on the context's compute stream without waiting, except
// the functions that say they wait.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "cortado/context.hpp"
#include "cortado/kernels/for_each.hpp"  // CORTADO_GPU_ONLY
#include "cortado/im2col.hpp"  // ConvGeometry

namespace cortado {

// ---- Softmax (softmax.cu) ------------------------------------------------------------------------
// x, y: (outer, channels, inner); y = softmax along channels at every (outer, inner) position, with the
// max subtracted first. y may be x. Backward: dx = (dy − Σ_c dy·y) · y; dx may be dy.
CORTADO_GPU_ONLY(void SoftmaxForwardGpu(Context& ctx, int64_t outer, int64_t channels, int64_t inner, const float* x,
                                        float* y))
CORTADO_GPU_ONLY(void SoftmaxBackwardGpu(Context& ctx, int64_t outer, int64_t channels, int64_t inner, const float* y,
                                         const float* dy, float* dx))

// ---- labels (softmax_loss.cu) --------------------------------------------------------------------
// A label as the CPU code reads it: static_cast<int>, with NaN and values outside int's range reading
// as INT_MIN, as x86 converts them (so they are out of range on both devices).
// The loss and accuracy kernels mark the first position whose label is out of range in one device
// word, `flag`; this reads it back (waiting for the compute stream) and returns that position and
// the label's value there (*value_host), or −1 when every label was valid. A null value_host (labels
// checked on the host upstream, Layer::BadLabelOut) skips the check: nothing is read or waited for.
CORTADO_GPU_ONLY(int64_t FirstBadLabelGpu(Context& ctx, const float* flag, const float* labels, float* value_host))

// ---- SoftmaxWithLoss (softmax_loss.cu) -----------------------------------------------------------
// Floats of the scratch the loss kernels share between forward and backward (block partial sums,
// the normalizer, the bad-label flag).
constexpr int64_t kSoftmaxLossWorkFloats = 1024;
// prob: (outer, channels, inner) probabilities; label: outer·inner class indices. Writes
// *loss = Σ −log(max(prob[label], FLT_MIN)) / n (summed in double, in a fixed order), where n is the
// count of positions not ignored when by_valid_count, else `normalizer`; n is at least 1. Ignored
// positions (has_ignore and label == ignore_label) count for nothing. Waits for the GPU to check the
// labels: returns the first position with a label outside [0, channels), or −1, as FirstBadLabelGpu.
CORTADO_GPU_ONLY(int64_t SoftmaxLossForwardGpu(Context& ctx, int64_t outer, int64_t channels, int64_t inner,
                                               const float* prob, const float* label, bool has_ignore, int ignore_label,
                                               bool by_valid_count, double normalizer, float* work, float* loss,
                                               float* bad_value_host))
// dx = (prob − onehot(label)) · dloss[0] / n with the forward's n; 0 at ignored positions.
CORTADO_GPU_ONLY(void SoftmaxLossBackwardGpu(Context& ctx, int64_t outer, int64_t channels, int64_t inner,
                                             const float* prob, const float* label, bool has_ignore, int ignore_label,
                                             const float* dloss, const float* work, float* dx))

// ---- Accuracy (accuracy.cu) ----------------------------------------------------------------------
// Floats of the accuracy kernels' scratch (integer counters) for `channels` classes.
inline int64_t AccuracyWorkFloats(int64_t channels) { return 4 + 2 * channels; }
// x: (outer, channels, inner) scores; label: outer·inner. A position is a hit when fewer than top_k
// other classes score >= the true class (ties count against it). *accuracy = hits / counted (0 when
// none); per_class (may be null): per class hits / samples (0 for a class without samples). Waits for
// the GPU to check the labels: returns the first bad position or −1, as FirstBadLabelGpu.
CORTADO_GPU_ONLY(int64_t AccuracyForwardGpu(Context& ctx, int64_t outer, int64_t channels, int64_t inner, int top_k,
                                            bool has_ignore, int ignore_label, const float* x, const float* label,
                                            float* work, float* accuracy, float* per_class, float* bad_value_host))

// ---- Pooling (pooling.cu) ------------------------------------------------------------------------
// `planes` planes of height × width pooled to out_h × out_w with pooling.cpp's windows: window (ph, pw)
// covers rows [ph·stride_h − pad_h, + kernel_h) clipped to the image; AVE divides by the window
// clipped to the padded image (up to height + pad_h). Forward matches the CPU bit for bit: MAX keeps
// the first maximum in row-major order and writes its index h·width + w to mask (−1 for an empty
// window, whose output is 0); AVE sums the window row by row. Backward writes every dx element.
struct PoolShape {
  int64_t planes;
  int height, width, out_h, out_w;
  int kernel_h, kernel_w, pad_h, pad_w, stride_h, stride_w;
};
CORTADO_GPU_ONLY(void MaxPoolForwardGpu(Context& ctx, const PoolShape& s, const float* x, float* y, float* mask))
CORTADO_GPU_ONLY(void MaxPoolBackwardGpu(Context& ctx, const PoolShape& s, const float* dy, const float* mask,
                                         float* dx))
CORTADO_GPU_ONLY(void AvePoolForwardGpu(Context& ctx, const PoolShape& s, const float* x, float* y))
CORTADO_GPU_ONLY(void AvePoolBackwardGpu(Context& ctx, const PoolShape& s, const float* dy, float* dx))
// STOCHASTIC (no padding; each window's arithmetic is src/layers/pooling_math.hpp's, as on the CPU).
// TRAIN: output k samples its window with StochasticPoolPick and the draw StochasticPoolUniform(seed, k);
// y = the sampled value, pick = its index h·width + w (−1 for an empty window, whose y is 0). Its
// backward is MaxPoolBackwardGpu with pick as the mask.
CORTADO_GPU_ONLY(void StoPoolForwardTrainGpu(Context& ctx, const PoolShape& s, const uint64_t* seed, const float* x,
                                             float* y, float* pick))
// TEST: y = StochasticPoolTestValue (Σx² / Σx, 0 when Σx ≤ 0), sum = Σx (0 for an empty window).
CORTADO_GPU_ONLY(void StoPoolForwardTestGpu(Context& ctx, const PoolShape& s, const float* x, float* y, float* sum))
// TEST's gradient: dx = Σ over the windows holding x with sum > 0 of dy·(2x − y) / sum. Writes every dx.
CORTADO_GPU_ONLY(void StoPoolBackwardTestGpu(Context& ctx, const PoolShape& s, const float* x, const float* y,
                                             const float* dy, const float* sum, float* dx))

// ---- Convolution, im2col engine (convolution.cu) -------------------------------------------------
// One image (channels × height × width) to its column matrix (col_rows() × out_size()), the layout of
// im2col.hpp with num = 1, and back (Col2ImGpu overwrites the image with the sum of its columns).
CORTADO_GPU_ONLY(void Im2ColGpu(Context& ctx, const float* image, const ConvGeometry& g, float* col))
CORTADO_GPU_ONLY(void Col2ImGpu(Context& ctx, const float* col, const ConvGeometry& g, float* image))
// y (num, channels, spatial) += bias[channel] (the bias gradient: ChannelSums of src/layers/scale_math.hpp's terms).
CORTADO_GPU_ONLY(void AddChannelBiasGpu(Context& ctx, int64_t num, int64_t channels, int64_t spatial, const float* bias,
                                        float* y))

// ---- Convolution, cuDNN engine (cudnn/convolution_cudnn.cpp) -------------------------------------
// Whether this build has cuDNN (false in a CUDA build without it and in a CPU-only build, whose
// versions of the functions below throw).
bool BuiltWithCudnn();
// One layer's cuDNN state: descriptors and the algorithms chosen for its shape, on FP32 data with TF32
// tensor cores when ctx.tf32(), else strict FP32 (CUDNN_FMA_MATH).
struct CudnnConvolution;
using CudnnConvolutionPtr = std::unique_ptr<CudnnConvolution, void (*)(CudnnConvolution*)>;
CudnnConvolutionPtr CreateCudnnConvolution();
// Describes x (num, g.channels, g.height, g.width), weights (num_output, channels / group, kernel),
// y (num, num_output, out_h, out_w) and picks, among cuDNN's ranked candidates, the fastest forward,
// backward-data and backward-filter algorithms of an allowed math type (deterministic ones first when
// the context's settings ask) whose workspace fits in workspace_limit bytes (logged once per change,
// under `who`). Returns the workspace the three need: their maximum.
size_t CudnnConvolutionReshape(Context& ctx, CudnnConvolution& conv, int num, int num_output, int group,
                               const ConvGeometry& g, size_t workspace_limit, const std::string& who);
// y = conv(x, w) (+ bias, when not null).
void CudnnConvolutionForward(Context& ctx, const CudnnConvolution& conv, const float* x, const float* w,
                             const float* bias, float* y, void* workspace, size_t workspace_bytes);
// dw += ∂/∂w and db += ∂/∂b (each skipped when null); dx = ∂/∂x (skipped when null).
void CudnnConvolutionBackward(Context& ctx, const CudnnConvolution& conv, const float* x, const float* w,
                              const float* dy, float* dw, float* db, float* dx, void* workspace,
                              size_t workspace_bytes);

}  // namespace cortado
