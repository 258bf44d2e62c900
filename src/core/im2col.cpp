// im2col.cpp — Im2Col and Col2Im for 2-D images. For each kernel tap (c, i, j) the output positions
// whose input falls inside the image form one rectangle, computed once per tap, so the inner loops
// are plain copies (contiguous when stride_w is 1) with no per-element bounds checks. The column
// matrix is walked row by row (tap by tap, every image of the batch in turn), so it is written and
// read sequentially while the much smaller images stay in cache.
#include "cortado/im2col.hpp"

#include <glog/logging.h>

#include <algorithm>
#include <cstring>

namespace cortado {

namespace {

// The output positions o in [0, out) whose input index o·stride + offset lies in [0, size):
// the half-open range [*lo, *hi).
void ValidRange(int offset, int stride, int size, int out, int* lo, int* hi) {
  *lo = offset >= 0 ? 0 : std::min(out, (-offset + stride - 1) / stride);
  const int last = size - 1 - offset;  // o·stride ≤ last
  *hi = last < 0 ? 0 : std::min(out, last / stride + 1);
  *hi = std::max(*hi, *lo);
}

// One tap (i, j) of the kernel: where its valid outputs are and where their inputs start. Plain
// local values, so the inner loops keep them in registers.
struct Tap {
  int out_h, out_w;
  int oh_lo, oh_hi, ow_lo, ow_hi;  // the rectangle of outputs whose input is inside the image
  int64_t in_offset;               // input index of output (oh_lo, ow_lo) within a plane
  int64_t in_row_step;             // input distance between consecutive output rows
  int stride_w;
};

Tap MakeTap(const ConvGeometry& g, int i, int j) {
  Tap t;
  t.out_h = g.out_h();
  t.out_w = g.out_w();
  const int ih0 = i * g.dilation_h - g.pad_h, iw0 = j * g.dilation_w - g.pad_w;
  ValidRange(ih0, g.stride_h, g.height, t.out_h, &t.oh_lo, &t.oh_hi);
  ValidRange(iw0, g.stride_w, g.width, t.out_w, &t.ow_lo, &t.ow_hi);
  t.in_offset = static_cast<int64_t>(t.oh_lo * g.stride_h + ih0) * g.width + t.ow_lo * g.stride_w + iw0;
  t.in_row_step = static_cast<int64_t>(g.stride_h) * g.width;
  t.stride_w = g.stride_w;
  return t;
}

// Copies a short run (often one output row of a few floats) in fixed-size blocks that the compiler
// turns into vector moves; cheaper than a memcpy call per row.
inline void CopyRun(const float* in, float* out, int n) {
  int k = 0;
  for (; k + 8 <= n; k += 8) std::memcpy(out + k, in + k, 8 * sizeof(float));
  if (k + 4 <= n) {
    std::memcpy(out + k, in + k, 4 * sizeof(float));
    k += 4;
  }
  for (; k < n; ++k) out[k] = in[k];
}

// One column-matrix row segment (out_h × out_w floats) for one tap of one image plane.
template <bool kUnitStride>
void UnrollTap(const Tap& t, const float* plane, float* out) {
  const int out_w = t.out_w, lo = t.ow_lo, hi = t.ow_hi, n = hi - lo, stride = kUnitStride ? 1 : t.stride_w;
  if (t.oh_lo > 0) std::memset(out, 0, sizeof(float) * t.oh_lo * out_w);
  if (t.oh_hi < t.out_h) std::memset(out + t.oh_hi * out_w, 0, sizeof(float) * (t.out_h - t.oh_hi) * out_w);
  const float* in = plane + t.in_offset;
  out += t.oh_lo * out_w;
  for (int oh = t.oh_lo; oh < t.oh_hi; ++oh, in += t.in_row_step, out += out_w) {
    for (int k = 0; k < lo; ++k) out[k] = 0.0f;
    if (kUnitStride) {
      CopyRun(in, out + lo, n);
    } else {
      for (int k = 0; k < n; ++k) out[lo + k] = in[k * stride];
    }
    for (int k = hi; k < out_w; ++k) out[k] = 0.0f;
  }
}

// The adjoint of UnrollTap: adds the segment back into the plane.
template <bool kUnitStride>
void FoldTap(const Tap& t, const float* in, float* plane) {
  const int out_w = t.out_w, n = t.ow_hi - t.ow_lo, stride = kUnitStride ? 1 : t.stride_w;
  float* out = plane + t.in_offset;
  in += t.oh_lo * out_w + t.ow_lo;
  for (int oh = t.oh_lo; oh < t.oh_hi; ++oh, in += out_w, out += t.in_row_step) {
    for (int k = 0; k < n; ++k) out[k * stride] += in[k];
  }
}

}  // namespace

void Im2Col(const float* images, int num, const ConvGeometry& g, float* col) {
  CHECK(g.out_h() > 0 && g.out_w() > 0) << "Im2Col: the kernel does not fit the padded image";
  const int64_t plane = static_cast<int64_t>(g.height) * g.width;
  const int64_t image = plane * g.channels;
  const int64_t hw = g.out_size();
  for (int c = 0; c < g.channels; ++c) {
    for (int i = 0; i < g.kernel_h; ++i) {
      for (int j = 0; j < g.kernel_w; ++j) {
        const Tap t = MakeTap(g, i, j);
        const float* src = images + c * plane;
        for (int n = 0; n < num; ++n, src += image, col += hw) {
          if (g.stride_w == 1) {
            UnrollTap<true>(t, src, col);
          } else {
            UnrollTap<false>(t, src, col);
          }
        }
      }
    }
  }
}

void Col2Im(const float* col, int num, const ConvGeometry& g, float* images) {
  CHECK(g.out_h() > 0 && g.out_w() > 0) << "Col2Im: the kernel does not fit the padded image";
  const int64_t plane = static_cast<int64_t>(g.height) * g.width;
  const int64_t image = plane * g.channels;
  const int64_t hw = g.out_size();
  std::memset(images, 0, sizeof(float) * image * num);
  for (int c = 0; c < g.channels; ++c) {
    for (int i = 0; i < g.kernel_h; ++i) {
      for (int j = 0; j < g.kernel_w; ++j) {
        const Tap t = MakeTap(g, i, j);
        float* dst = images + c * plane;
        for (int n = 0; n < num; ++n, dst += image, col += hw) {
          if (g.stride_w == 1) {
            FoldTap<true>(t, col, dst);
          } else {
            FoldTap<false>(t, col, dst);
          }
        }
      }
    }
  }
}

}  // namespace cortado
