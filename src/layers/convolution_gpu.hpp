// convolution_gpu.hpp — Convolution's GPU code: the im2col engine's kernels (cuda/convolution.cu), which
// Deconvolution and Im2col use too, and the cuDNN engine (cudnn/convolution_cudnn.cpp). No CUDA types,
// so the layers' .cpp files call them from Forward_gpu / Backward_gpu; in a CPU-only build
// CORTADO_GPU_ONLY gives each launcher a body that throws, and no_cudnn/cudnn_stub.cpp stands in for
// cuDNN in any build without it. Every pointer is a device pointer; everything runs on the context's
// compute stream without waiting.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "cortado/context.hpp"
#include "cortado/im2col.hpp"            // ConvGeometry
#include "cortado/kernels/for_each.hpp"  // CORTADO_GPU_ONLY
#include "cortado/kernels/storage_types.hpp"  // DataType

namespace cortado {

// ---- Convolution, im2col engine (convolution.cu) -------------------------------------------------
// One image (channels × height × width) to its column matrix (col_rows() × out_size()), the layout of
// im2col.hpp with num = 1, and back (Col2ImGpu overwrites the image with the sum of its columns).
CORTADO_GPU_ONLY(void Im2ColGpu(Context& ctx, const float* image, const ConvGeometry& g, float* col))
CORTADO_GPU_ONLY(void Col2ImGpu(Context& ctx, const float* col, const ConvGeometry& g, float* image))

// ---- Convolution, cuDNN engine (cudnn/convolution_cudnn.cpp) -------------------------------------
// Whether this build has cuDNN (false in a CUDA build without it and in a CPU-only build, whose
// versions of the functions below throw).
bool BuiltWithCudnn();
// One layer's cuDNN state: descriptors and the algorithms chosen for its shape. On FP32 data with TF32
// tensor cores when ctx.tf32(), else strict FP32 (CUDNN_FMA_MATH); on bf16 or fp16 data (x, weights, y
// and their gradients all of that type) with tensor cores and FP32 sums. Chosen in two steps: a plan
// when the layer is shaped (CudnnConvolutionReshape), timings once its memory is bound (..Measure).
struct CudnnConvolution;
using CudnnConvolutionPtr = std::unique_ptr<CudnnConvolution, void (*)(CudnnConvolution*)>;
CudnnConvolutionPtr CreateCudnnConvolution();
// Describes x (num, g.channels, g.height, g.width), weights (num_output, channels / group, kernel),
// y (num, num_output, out_h, out_w), all of `type`, in NCHW order or, channels_last, NHWC (the
// weights then (num_output, kernel_h, kernel_w, channels / group)), and lists cuDNN's candidate
// forward, backward-data and backward-filter algorithms by its heuristic (no timing: the buffers are
// not bound yet). Keeps, for now, the first of an allowed math type (deterministic ones first when the
// context's settings ask) whose workspace fits in workspace_limit bytes, or this shape's earlier
// timing. Returns the workspace to request: the most any acceptable candidate needs, so that
// CudnnConvolutionMeasure may pick any. The same shape and limit again keep the algorithms (timed ones too).
size_t CudnnConvolutionReshape(Context& ctx, CudnnConvolution& conv, int num, int num_output, int group,
                               const ConvGeometry& g, DataType type, bool channels_last, size_t workspace_limit,
                               const std::string& who);
// A layer's bound buffers (of the type and layout described), for timing cuDNN's algorithms on them.
// Their contents are garbage and may be overwritten, except w (only read). A pass whose buffers are
// null is not timed: dy or dx null skips backward data, dy or dw null backward filter.
struct CudnnConvolutionBuffers {
  const void* x = nullptr;
  const void* w = nullptr;
  void* y = nullptr;
  const void* dy = nullptr;
  void* dx = nullptr;
  void* dw = nullptr;
  void* workspace = nullptr;   // the net's shared workspace
  size_t workspace_bytes = 0;  // its real size (the layer's limit still applies)
};
// Once the memory is bound, before the first pass and never inside a CUDA graph capture: times every
// algorithm of each pass with buffers (cudnnFind*Ex, each math type allowed) and keeps the
// fastest acceptable one with the math type it was timed with (cached per shape, type, layout, rules,
// device and available workspace; logged under `who`). Passes not timed keep CudnnConvolutionReshape's
// pick. Returns the workspace the layer's calls should pass, at most the bound one.
size_t CudnnConvolutionMeasure(Context& ctx, CudnnConvolution& conv, const CudnnConvolutionBuffers& buffers,
                               const std::string& who);
// y = conv(x, w) (the bias is the layer's own).
void CudnnConvolutionForward(Context& ctx, const CudnnConvolution& conv, const void* x, const void* w, void* y,
                             void* workspace, size_t workspace_bytes);
// dw (+)= ∂/∂w (added to dw when dw_accumulates, else written; skipped when null) and dx = ∂/∂x
// (skipped when null).
void CudnnConvolutionBackward(Context& ctx, const CudnnConvolution& conv, const void* x, const void* w,
                              const void* dy, void* dw, bool dw_accumulates, void* dx, void* workspace,
                              size_t workspace_bytes);

}  // namespace cortado
