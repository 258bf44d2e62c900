// onednn.hpp — what Cortado asks of oneDNN (onednn/*.cpp; a build without oneDNN links
// no_onednn/ stubs that are never reached, since OneDnnEnabled() is false there).
//
// Everything works over Cortado's own buffers: activations NCHW, weights OIHW, row-major matrices.
// Where oneDNN's fastest code wants other layouts ("native"), the data is reordered through the
// caller's scratch buffer in every call, so the memory plan counts it and nothing is allocated.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "cortado/im2col.hpp"  // ConvGeometry
#include "cortado/math.hpp"    // Trans

namespace cortado {

// C = alpha · op(A) · op(B) + beta · C (row-major, with leading dimensions), with oneDNN's SGEMM: its
// kernels follow the CPU's instruction sets. Inside an OpenMP parallel region it runs on the calling
// thread; outside, on the OpenMP threads.
void OneDnnGemm(Trans trans_a, Trans trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                const float* b, int ldb, float beta, float* c, int ldc);

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
OneDnnConvolutionPtr CreateOneDnnConvolution(int num, int num_output, int group, const ConvGeometry& g, bool bias,
                                             OneDnnLayout layout, std::string* why);
// The scratch one call needs: oneDNN's own scratchpad plus the reordered data.
size_t OneDnnConvolutionScratchBytes(const OneDnnConvolution& conv);
// oneDNN's names of the implementations it chose, e.g. "jit:avx512_core".
std::string OneDnnConvolutionImplementation(const OneDnnConvolution& conv);
// y = conv(x, w) + bias (no bias when the convolution was made without).
void OneDnnConvolutionForward(const OneDnnConvolution& conv, const float* x, const float* w, const float* bias,
                              float* y, void* scratch);
// dw += ∂/∂w and db += ∂/∂b (each skipped when null); dx = ∂/∂x (skipped when null).
void OneDnnConvolutionBackward(const OneDnnConvolution& conv, const float* x, const float* w, const float* dy,
                               float* dw, float* db, float* dx, void* scratch);

}  // namespace cortado
