// convolution.cu — the im2col engine's GPU kernels (convolution_gpu.hpp): im2col and col2im for one image
// in im2col.hpp's layout. Device-specific by algorithm: the CPU (im2col.cpp) copies each tap's in-image
// rectangle across the batch and col2im scatter-adds tap by tap, where here a thread writes one output
// position's taps, and col2im gathers, a thread summing one pixel's entries. (The bias is scale_math.hpp's
// ScaleBias on either device; the cuDNN stand-ins of a build without cuDNN are no_cudnn/cudnn_stub.cpp.)

#include "../convolution_gpu.hpp"
#include "cortado/cuda/resources.hpp"  // cuda::Stream, CORTADO_KERNEL_LOOP, CORTADO_LAUNCH
#include "cortado/error.hpp"

namespace cortado {

namespace {

// The geometry with the output size worked out on the host (ConvGeometry's functions are host-only).
struct Geometry {
  ConvGeometry g;
  int out_h, out_w;
};

// One thread per (channel, output row, output column): writes that position's kernel_h·kernel_w
// column entries, row (c·kernel_h + i)·kernel_w + j of the column matrix, 0 where the tap is in the
// padding.
__global__ void Im2ColKernel(int64_t n, Geometry s, const float* image, float* col) {
  const ConvGeometry& g = s.g;
  const int64_t hw = static_cast<int64_t>(s.out_h) * s.out_w;
  CORTADO_KERNEL_LOOP(k, n) {
    const int ow = static_cast<int>(k % s.out_w), oh = static_cast<int>(k / s.out_w % s.out_h);
    const int64_t c = k / hw;
    const float* plane = image + c * g.height * g.width;
    float* out = col + c * g.kernel_h * g.kernel_w * hw + oh * s.out_w + ow;
    const int h0 = oh * g.stride_h - g.pad_h, w0 = ow * g.stride_w - g.pad_w;
    for (int i = 0; i < g.kernel_h; ++i) {
      const int h = h0 + i * g.dilation_h;
      for (int j = 0; j < g.kernel_w; ++j, out += hw) {
        const int w = w0 + j * g.dilation_w;
        *out = h >= 0 && h < g.height && w >= 0 && w < g.width ? plane[h * g.width + w] : 0.0f;
      }
    }
  }
}

// One thread per image pixel (c, h, w): the sum of the column entries unrolled from it. Output
// position (oh, ow) read the pixel through tap (i, j) when h = oh·stride_h − pad_h + i·dilation_h
// (likewise w), so only outputs in [lo, hi) along each axis can have, and the tap must be a whole
// multiple of the dilation.
__global__ void Col2ImKernel(int64_t n, Geometry s, const float* col, float* image) {
  const ConvGeometry& g = s.g;
  const int64_t hw = static_cast<int64_t>(s.out_h) * s.out_w;
  const int extent_h = g.dilation_h * (g.kernel_h - 1) + 1, extent_w = g.dilation_w * (g.kernel_w - 1) + 1;
  CORTADO_KERNEL_LOOP(k, n) {
    const int w = static_cast<int>(k % g.width) + g.pad_w, h = static_cast<int>(k / g.width % g.height) + g.pad_h;
    const int64_t c = k / (static_cast<int64_t>(g.width) * g.height);
    const int oh_lo = h < extent_h ? 0 : (h - extent_h) / g.stride_h + 1;
    const int oh_hi = min(h / g.stride_h + 1, s.out_h);
    const int ow_lo = w < extent_w ? 0 : (w - extent_w) / g.stride_w + 1;
    const int ow_hi = min(w / g.stride_w + 1, s.out_w);
    float sum = 0.0f;
    for (int oh = oh_lo; oh < oh_hi; ++oh) {
      const int dh = h - oh * g.stride_h;  // i·dilation_h, 0 ≤ dh < extent_h
      if (dh % g.dilation_h != 0) continue;
      const int i = dh / g.dilation_h;
      for (int ow = ow_lo; ow < ow_hi; ++ow) {
        const int dw = w - ow * g.stride_w;
        if (dw % g.dilation_w != 0) continue;
        const int j = dw / g.dilation_w;
        sum += col[((c * g.kernel_h + i) * g.kernel_w + j) * hw + oh * s.out_w + ow];
      }
    }
    image[k] = sum;
  }
}

Geometry WithOutputSize(const ConvGeometry& g) { return {g, g.out_h(), g.out_w()}; }

}  // namespace

void Im2ColGpu(Context& ctx, const float* image, const ConvGeometry& g, float* col) {
  const int64_t n = static_cast<int64_t>(g.channels) * g.out_size();
  if (n == 0) return;
  CORTADO_LAUNCH(Im2ColKernel, cuda::BlocksFor(n), cuda::kThreads, 0, cuda::Stream(ctx), n, WithOutputSize(g), image,
                 col);
}

void Col2ImGpu(Context& ctx, const float* col, const ConvGeometry& g, float* image) {
  const int64_t n = static_cast<int64_t>(g.channels) * g.height * g.width;
  if (n == 0) return;
  CORTADO_LAUNCH(Col2ImKernel, cuda::BlocksFor(n), cuda::kThreads, 0, cuda::Stream(ctx), n, WithOutputSize(g), col,
                 image);
}

}  // namespace cortado
