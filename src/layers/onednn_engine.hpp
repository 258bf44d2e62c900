// onednn_engine.hpp — what the layers ask of oneDNN: Convolution's, Pooling's and LRN's CPU engine
// (onednn/*.cpp; a build without oneDNN links no_onednn/ stubs that are never reached, since
// OneDnnEnabled() is false there). cpu_gemm's use of oneDNN's SGEMM is src/core/onednn_math.hpp's.
//
// Everything works over Cortado's own buffers: activations NCHW, weights OIHW, row-major matrices.
// Where oneDNN's fastest code wants other layouts ("native"), the data is reordered through the
// caller's scratch buffer in every call, so the memory plan counts it and nothing is allocated.
// Primitives are made for one element type (OneDnnDataType), which their calls' buffers hold: float
// today; bf16 is the type mixed precision will ask for where the CPU has AVX-512 BF16 or AMX.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "cortado/im2col.hpp"  // ConvGeometry
#include "lrn_gpu.hpp"          // LrnShape
#include "pooling_math.hpp"     // PoolShape

namespace cortado {

enum class OneDnnDataType { kFloat32, kBFloat16 };

// ---- Convolution ---------------------------------------------------------------------------------
// kPlain: oneDNN's code for NCHW / OIHW data as Cortado holds it. kNative: the layouts oneDNN's
// fastest code for this CPU asks for (blocked channels), data reordered in and out in each call.
enum class OneDnnLayout { kPlain, kNative };
inline const char* OneDnnLayoutName(OneDnnLayout layout) { return layout == OneDnnLayout::kNative ? "native" : "plain"; }

// One convolution shape's primitives (forward, backward data, backward weights and bias) and the
// reorders around them, created once when the layer is shaped.
struct OneDnnConvolution;
using OneDnnConvolutionPtr = std::unique_ptr<OneDnnConvolution, void (*)(OneDnnConvolution*)>;
// x (num, g.channels, g.height, g.width), weights (num_output, channels / group, kernel), bias
// (num_output) when `bias`, y (num, num_output, out_h, out_w). Null, with the reason in *why, when
// oneDNN has no implementation for it.
// channels_last: x, y and their gradients are NHWC in Cortado's buffers (the weights stay OIHW).
OneDnnConvolutionPtr CreateOneDnnConvolution(int num, int num_output, int group, const ConvGeometry& g, bool bias,
                                             OneDnnLayout layout, std::string* why,
                                             OneDnnDataType type = OneDnnDataType::kFloat32,
                                             bool channels_last = false);
// The scratch one call needs: oneDNN's own scratchpad plus the reordered data.
size_t OneDnnConvolutionScratchBytes(const OneDnnConvolution& conv);
// oneDNN's names of the implementations it chose, e.g. "jit:avx512_core".
std::string OneDnnConvolutionImplementation(const OneDnnConvolution& conv);
// y = conv(x, w) + bias (no bias when the convolution was made without).
void OneDnnConvolutionForward(const OneDnnConvolution& conv, const void* x, const void* w, const void* bias,
                              void* y, void* scratch);
// dw += ∂/∂w and db += ∂/∂b (each skipped when null); dx = ∂/∂x (skipped when null).
void OneDnnConvolutionBackward(const OneDnnConvolution& conv, const void* x, const void* w, const void* dy,
                               void* dw, void* db, void* dx, void* scratch);

// ---- Pooling -------------------------------------------------------------------------------------
// MAX, or AVE dividing every window by kernel_h · kernel_w (padding counted as zeros), over
// (planes, height, width) data as Cortado holds it. Padding on the right and bottom is what the output
// size needs; a window wholly in padding makes it fail. Caffe's AVE divides a window cut by the padded
// border by less: the caller asks only where no window is cut (see pooling.cpp).
struct OneDnnPooling;
using OneDnnPoolingPtr = std::unique_ptr<OneDnnPooling, void (*)(OneDnnPooling*)>;
OneDnnPoolingPtr CreateOneDnnPooling(const PoolShape& s, bool max, std::string* why,
                                     OneDnnDataType type = OneDnnDataType::kFloat32);
// Scratch of one call; and MAX's workspace (where each window's maximum was), kept from the forward
// for the backward (0 for AVE).
size_t OneDnnPoolingScratchBytes(const OneDnnPooling& pool);
size_t OneDnnPoolingWorkspaceBytes(const OneDnnPooling& pool);
std::string OneDnnPoolingImplementation(const OneDnnPooling& pool);
void OneDnnPoolingForward(const OneDnnPooling& pool, const void* x, void* y, void* workspace, void* scratch);
// dx = ∂/∂x, overwritten.
void OneDnnPoolingBackward(const OneDnnPooling& pool, const void* dy, void* dx, const void* workspace, void* scratch);

// ---- LRN -----------------------------------------------------------------------------------------
// Caffe's LRN (lrn.cpp): y = x · (k + coeff · Σ_window x²)^(−beta), across channels or within a
// channel's plane, on NCHW data (kNative: computed on channel blocks, reordered through the scratch).
// The workspace (what oneDNN keeps of the forward for the backward) is kept from one to the other.
struct OneDnnLrn;
using OneDnnLrnPtr = std::unique_ptr<OneDnnLrn, void (*)(OneDnnLrn*)>;
OneDnnLrnPtr CreateOneDnnLrn(const LrnShape& s, OneDnnLayout layout, std::string* why,
                             OneDnnDataType type = OneDnnDataType::kFloat32);
size_t OneDnnLrnScratchBytes(const OneDnnLrn& lrn);
size_t OneDnnLrnWorkspaceBytes(const OneDnnLrn& lrn);
std::string OneDnnLrnImplementation(const OneDnnLrn& lrn);
void OneDnnLrnForward(const OneDnnLrn& lrn, const void* x, void* y, void* workspace, void* scratch);
// dx = ∂/∂x (overwritten), from x, dy and the forward's workspace.
void OneDnnLrnBackward(const OneDnnLrn& lrn, const void* x, const void* dy, void* dx, const void* workspace,
                       void* scratch);

}  // namespace cortado
