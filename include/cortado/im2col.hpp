// im2col.hpp — unrolling 2-D image patches into matrix columns (im2col) and folding them back
// (col2im), the data movement that turns a convolution into one matrix product.
//
// For an image of shape (channels, height, width) and a kernel kernel_h × kernel_w with padding,
// stride and dilation, the output has out_h × out_w positions:
//   out_h = (height + 2·pad_h − (dilation_h·(kernel_h − 1) + 1)) / stride_h + 1   (floored)
// The column matrix has channels·kernel_h·kernel_w rows, row r = (c·kernel_h + i)·kernel_w + j, and
// one column per output position p = oh·out_w + ow:
//   col[r][p] = image[c][oh·stride_h − pad_h + i·dilation_h][ow·stride_w − pad_w + j·dilation_w]
// (0 where that falls in the padding). A batch of images is unrolled side by side: the matrix has
// num · out_h · out_w columns, image n's columns starting at n · out_h · out_w, so one matrix product
// covers the whole batch.
#pragma once

#include <cstdint>

namespace cortado {

struct ConvGeometry {
  int channels = 1, height = 1, width = 1;
  int kernel_h = 1, kernel_w = 1;
  int pad_h = 0, pad_w = 0;
  int stride_h = 1, stride_w = 1;
  int dilation_h = 1, dilation_w = 1;

  int extent_h() const { return dilation_h * (kernel_h - 1) + 1; }
  int extent_w() const { return dilation_w * (kernel_w - 1) + 1; }
  int out_h() const { return (height + 2 * pad_h - extent_h()) / stride_h + 1; }
  int out_w() const { return (width + 2 * pad_w - extent_w()) / stride_w + 1; }
  int64_t col_rows() const { return static_cast<int64_t>(channels) * kernel_h * kernel_w; }
  int64_t out_size() const { return static_cast<int64_t>(out_h()) * out_w(); }
};

// images: num images of channels·height·width floats, one after another.
// col: col_rows() × (num · out_size()), written whole (padding positions become 0).
// Requires the kernel extent to fit in the padded image (out_h, out_w ≥ 1).
void Im2Col(const float* images, int num, const ConvGeometry& g, float* col);

// The adjoint of Im2Col: each image pixel gets the sum of the column entries unrolled from it
// (entries from padding are dropped). Overwrites images.
void Col2Im(const float* col, int num, const ConvGeometry& g, float* images);

}  // namespace cortado
