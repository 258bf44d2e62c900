// im2col_test.cpp — Im2Col against a hand-worked case and a direct per-element definition, and
// Col2Im as its adjoint (⟨im2col(x), c⟩ = ⟨x, col2im(c)⟩), for padded, strided, dilated kernels.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "cortado/im2col.hpp"

namespace cortado::test {
namespace {

ConvGeometry Geometry(int c, int h, int w, int kh, int kw, int ph, int pw, int sh, int sw, int dh, int dw) {
  ConvGeometry g;
  g.channels = c, g.height = h, g.width = w;
  g.kernel_h = kh, g.kernel_w = kw, g.pad_h = ph, g.pad_w = pw;
  g.stride_h = sh, g.stride_w = sw, g.dilation_h = dh, g.dilation_w = dw;
  return g;
}

std::vector<float> Random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// The definition, one element at a time.
float Expected(const std::vector<float>& image, const ConvGeometry& g, int64_t row, int oh, int ow) {
  const int j = static_cast<int>(row % g.kernel_w);
  const int i = static_cast<int>(row / g.kernel_w % g.kernel_h);
  const int c = static_cast<int>(row / g.kernel_w / g.kernel_h);
  const int ih = oh * g.stride_h - g.pad_h + i * g.dilation_h;
  const int iw = ow * g.stride_w - g.pad_w + j * g.dilation_w;
  if (ih < 0 || ih >= g.height || iw < 0 || iw >= g.width) return 0.0f;
  return image[(static_cast<size_t>(c) * g.height + ih) * g.width + iw];
}

const ConvGeometry kCases[] = {
    Geometry(1, 6, 6, 3, 3, 0, 0, 1, 1, 1, 1),  // plain
    Geometry(2, 5, 7, 3, 3, 1, 1, 1, 1, 1, 1),  // padded
    Geometry(3, 7, 6, 3, 2, 2, 1, 2, 3, 1, 1),  // rectangular, strided, padded
    Geometry(2, 9, 8, 3, 2, 1, 2, 1, 2, 2, 3),  // dilated
    Geometry(1, 4, 4, 4, 4, 0, 0, 1, 1, 1, 1),  // kernel covers the image: one output
    Geometry(2, 3, 3, 5, 5, 1, 1, 1, 1, 1, 1),  // kernel as large as the padded image
    Geometry(1, 5, 5, 1, 1, 0, 0, 2, 2, 1, 1),  // 1×1, strided
};

}  // namespace

TEST(Im2Col, HandWorkedCase) {
  // Image 3×3 = 1..9, kernel 2×2: column p holds the 2×2 patch at output p.
  const std::vector<float> image{1, 2, 3, 4, 5, 6, 7, 8, 9};
  const ConvGeometry g = Geometry(1, 3, 3, 2, 2, 0, 0, 1, 1, 1, 1);
  std::vector<float> col(4 * 4);
  Im2Col(image.data(), 1, g, col.data());
  const std::vector<float> expected{1, 2, 4, 5,   // tap (0,0)
                                    2, 3, 5, 6,   // tap (0,1)
                                    4, 5, 7, 8,   // tap (1,0)
                                    5, 6, 8, 9};  // tap (1,1)
  EXPECT_EQ(col, expected);
}

TEST(Im2Col, HandWorkedPaddedStridedCase) {
  // Image 2×2 = 1..4, kernel 2×2, pad 1, stride 2: outputs 2×2, each patch has one pixel.
  const std::vector<float> image{1, 2, 3, 4};
  const ConvGeometry g = Geometry(1, 2, 2, 2, 2, 1, 1, 2, 2, 1, 1);
  ASSERT_EQ(g.out_h(), 2);
  std::vector<float> col(4 * 4, -1.0f);
  Im2Col(image.data(), 1, g, col.data());
  const std::vector<float> expected{0, 0, 0, 4,  0, 0, 3, 0,  0, 2, 0, 0,  1, 0, 0, 0};
  EXPECT_EQ(col, expected);
}

TEST(Im2Col, MatchesDefinitionForABatch) {
  for (const ConvGeometry& g : kCases) {
    SCOPED_TRACE(testing::Message() << "c" << g.channels << " " << g.height << "x" << g.width << " k"
                                    << g.kernel_h << "x" << g.kernel_w << " d" << g.dilation_h);
    // Three images side by side: row r of image n at col[r·3·hw + n·hw …].
    const int num = 3;
    const int64_t size = static_cast<int64_t>(g.channels) * g.height * g.width;
    const std::vector<float> images = Random(num * size, 7);
    const int64_t hw = g.out_size(), stride = num * hw;
    std::vector<float> col(g.col_rows() * stride, 99.0f);
    Im2Col(images.data(), num, g, col.data());
    for (int n = 0; n < num; ++n) {
      const std::vector<float> image(images.begin() + n * size, images.begin() + (n + 1) * size);
      for (int64_t r = 0; r < g.col_rows(); ++r)
        for (int oh = 0; oh < g.out_h(); ++oh)
          for (int ow = 0; ow < g.out_w(); ++ow)
            ASSERT_EQ(col[r * stride + n * hw + oh * g.out_w() + ow], Expected(image, g, r, oh, ow))
                << "image " << n << " row " << r << " output " << oh << "," << ow;
    }
  }
}

TEST(Col2Im, IsTheAdjointOfIm2Col) {
  for (const ConvGeometry& g : kCases) {
    const int num = 2;
    const int64_t size = num * static_cast<int64_t>(g.channels) * g.height * g.width;
    const int64_t cols = g.col_rows() * num * g.out_size();
    const std::vector<float> x = Random(size, 11);
    const std::vector<float> c = Random(cols, 13);
    std::vector<float> col(cols, 0.0f), back(size, 123.0f);  // Col2Im must overwrite
    Im2Col(x.data(), num, g, col.data());
    Col2Im(c.data(), num, g, back.data());
    double lhs = 0, rhs = 0;
    for (int64_t i = 0; i < cols; ++i) lhs += double(col[i]) * c[i];
    for (int64_t i = 0; i < size; ++i) rhs += double(x[i]) * back[i];
    EXPECT_NEAR(lhs, rhs, 1e-4 * (1 + std::abs(lhs)));
  }
}

TEST(Col2Im, HandWorkedCase) {
  // Kernel 2×2 on a 3×3 image: the centre pixel is covered by all four outputs and four taps.
  const ConvGeometry g = Geometry(1, 3, 3, 2, 2, 0, 0, 1, 1, 1, 1);
  std::vector<float> col(16, 1.0f), image(9);
  Col2Im(col.data(), 1, g, image.data());
  EXPECT_EQ(image, (std::vector<float>{1, 2, 1, 2, 4, 2, 1, 2, 1}));
}

}  // namespace cortado::test
