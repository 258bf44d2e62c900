// im2col_layer_test.cpp — Im2col: a padded, strided, dilated case worked by hand (forward, and the
// overlap counts of its backward), and cases checked against a direct loop written here from the
// definition (rectangular geometry, a channel axis after leading axes, 1-D, a reshaped bottom); top
// shapes; finite-difference gradients; and one-line errors naming the layer.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "cortado/error.hpp"
#include "cortado/memory.hpp"  // MemoryPlan
#include "test_util.hpp"

namespace cortado::test {
namespace {

struct Geometry {
  int kh, kw, ph, pw, sh, sw, dh, dw;
};

int OutSize(int in, int k, int p, int s, int d) { return (in + 2 * p - (d * (k - 1) + 1)) / s + 1; }

// Calls copy(x index, y index) for every top element taken from the bottom, for `images` images of
// c × h × w: y[a][(ch·kh + i)·kw + j][oh][ow] = x[a][ch][oh·sh − ph + i·dh][ow·sw − pw + j·dw]; top
// elements not visited lie in the padding (0).
template <typename Copy>
void ForEachCopy(int images, int c, int h, int w, const Geometry& g, Copy copy) {
  const int oh_n = OutSize(h, g.kh, g.ph, g.sh, g.dh), ow_n = OutSize(w, g.kw, g.pw, g.sw, g.dw);
  for (int a = 0; a < images; ++a)
    for (int ch = 0; ch < c; ++ch)
      for (int i = 0; i < g.kh; ++i)
        for (int j = 0; j < g.kw; ++j)
          for (int oh = 0; oh < oh_n; ++oh)
            for (int ow = 0; ow < ow_n; ++ow) {
              const int ih = oh * g.sh - g.ph + i * g.dh, iw = ow * g.sw - g.pw + j * g.dw;
              if (ih < 0 || ih >= h || iw < 0 || iw >= w) continue;
              const int64_t row = (int64_t(a) * c + ch) * g.kh * g.kw + i * g.kw + j;
              copy(((int64_t(a) * c + ch) * h + ih) * w + iw, (row * oh_n + oh) * ow_n + ow);
            }
}

// Forward and backward of the layer against ForEachCopy (bottom viewed as `images` images c × h × w).
void CheckAgainstDirect(LayerFixture& f, int images, int c, int h, int w, const Geometry& g) {
  f.FillBottoms();
  const float* x = f.bottom(0).data();
  std::vector<float> y(f.top(0).count(), 0.0f), dy(f.top(0).count()), dx(f.bottom(0).count(), 0.0f);
  for (size_t i = 0; i < dy.size(); ++i) dy[i] = static_cast<float>(i % 5) - 2.0f;
  ForEachCopy(images, c, h, w, g, [&](int64_t xi, int64_t yi) {
    y[yi] = x[xi];
    dx[xi] += dy[yi];
  });
  f.Forward();
  for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(f.top(0).data()[i], y[i]) << "top " << i;
  std::copy(dy.begin(), dy.end(), f.top(0).diff());
  std::fill(f.bottom(0).diff(), f.bottom(0).diff() + f.bottom(0).count(), 99.0f);  // overwritten, not added to
  f.Backward();
  for (size_t i = 0; i < dx.size(); ++i) ASSERT_EQ(f.bottom(0).diff()[i], dx[i]) << "bottom diff " << i;
}

const char* const kRectangular =
    "type: 'Im2col' convolution_param { kernel_h: 3 kernel_w: 2 pad_h: 1 pad_w: 2 stride_h: 2 stride_w: 1 "
    "dilation: 2 dilation: 3 }";
const Geometry kRectangularGeometry{3, 2, 1, 2, 2, 1, 2, 3};

std::string ErrorLine(const std::string& text, const std::vector<int>& shape) {
  return ErrorOf([&] { LayerFixture f("name: 'cols' " + text, {shape}); });
}

void ExpectLayerError(const std::string& message, const std::string& part) {
  EXPECT_EQ(message.rfind("layer cols (Im2col): ", 0), 0u) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_NE(message.find(part), std::string::npos) << message;
}

}  // namespace

// Two 4×4 images (x = 1…16 row by row, then −x), kernel 2, pad 1, stride 2, dilation 2: the dilated
// kernel spans 3, so the output is (4 + 2 − 3) / 2 + 1 = 2 per axis, and tap (i, j) of output (oh, ow)
// reads x[2·oh − 1 + 2·i][2·ow − 1 + 2·j].
TEST(Im2col, PaddedStridedDilatedByHand) {
  LayerFixture f("type: 'Im2col' convolution_param { kernel_size: 2 pad: 1 stride: 2 dilation: 2 }", {{2, 1, 4, 4}});
  ASSERT_EQ(f.top(0).shape(), (std::vector<int>{2, 4, 2, 2}));
  for (int k = 0; k < 16; ++k) {
    f.bottom(0).data()[k] = static_cast<float>(k + 1);
    f.bottom(0).data()[16 + k] = -static_cast<float>(k + 1);
  }
  f.Forward();
  const std::vector<float> columns = {
      0, 0, 0, 6,     // tap (0, 0): rows −1, 1 × columns −1, 1
      0, 0, 6, 8,     // tap (0, 1): rows −1, 1 × columns 1, 3
      0, 6, 0, 14,    // tap (1, 0): rows 1, 3 × columns −1, 1
      6, 8, 14, 16};  // tap (1, 1): rows 1, 3 × columns 1, 3
  for (int k = 0; k < 16; ++k) {
    EXPECT_EQ(f.top(0).data()[k], columns[k]) << k;
    EXPECT_EQ(f.top(0).data()[16 + k], -columns[k]) << "second image " << k;
  }
  // Backward with every top gradient 1: each pixel gets the number of column entries copied from it
  // (x = 6 four times, 8 and 14 twice, 16 once; the other pixels none).
  std::fill(f.top(0).diff(), f.top(0).diff() + 32, 1.0f);
  f.Backward();
  std::vector<float> counts(16, 0.0f);
  counts[5] = 4, counts[7] = 2, counts[13] = 2, counts[15] = 1;  // x = 6, 8, 14, 16
  for (int k = 0; k < 16; ++k) {
    EXPECT_EQ(f.bottom(0).diff()[k], counts[k]) << k;
    EXPECT_EQ(f.bottom(0).diff()[16 + k], counts[k]) << "second image " << k;
  }
}

// Windows that overlap (kernel 2, stride 1) over a 3×3 image: the gradient of each pixel is how many
// of the four windows hold it.
TEST(Im2col, BackwardSumsOverlappingWindows) {
  LayerFixture f("type: 'Im2col' convolution_param { kernel_size: 2 }", {{1, 1, 3, 3}});
  ASSERT_EQ(f.top(0).shape(), (std::vector<int>{1, 4, 2, 2}));
  std::fill(f.top(0).diff(), f.top(0).diff() + 16, 1.0f);
  f.Backward();
  const std::vector<float> counts = {1, 2, 1, 2, 4, 2, 1, 2, 1};
  for (int k = 0; k < 9; ++k) EXPECT_EQ(f.bottom(0).diff()[k], counts[k]) << k;
}

TEST(Im2col, TopShapes) {
  const auto top_shape = [](const std::string& param, const std::vector<int>& bottom) {
    return LayerFixture("type: 'Im2col' convolution_param { " + param + " }", {bottom}).top(0).shape();
  };
  // 3 channels × 3×2 taps; (7 + 2 − 5) / 2 + 1 = 3 rows, (5 + 4 − 4) / 1 + 1 = 6 columns.
  EXPECT_EQ(LayerFixture(kRectangular, {{2, 3, 7, 5}}).top(0).shape(), (std::vector<int>{2, 18, 3, 6}));
  // Floored: (6 − 3) / 2 + 1 = 2.
  EXPECT_EQ(top_shape("kernel_size: 3 stride: 2", {1, 2, 6, 6}), (std::vector<int>{1, 18, 2, 2}));
  // Leading axes are kept; per-axis kernel_size and stride.
  EXPECT_EQ(top_shape("axis: 2 kernel_size: 2 kernel_size: 3 stride: 1 stride: 2", {2, 3, 4, 5, 7}),
            (std::vector<int>{2, 3, 24, 4, 3}));
  // One spatial axis: (9 + 2 − 5) / 2 + 1 = 4.
  EXPECT_EQ(top_shape("kernel_size: 3 dilation: 2 pad: 1 stride: 2", {2, 3, 9}), (std::vector<int>{2, 9, 4}));
  // force_nd_im2col changes nothing.
  EXPECT_EQ(top_shape("kernel_size: 2 force_nd_im2col: true", {1, 2, 3, 3}), (std::vector<int>{1, 8, 2, 2}));
}

TEST(Im2col, RectangularGeometryMatchesTheDefinition) {
  LayerFixture f(kRectangular, {{2, 3, 7, 5}});
  CheckAgainstDirect(f, 2, 3, 7, 5, kRectangularGeometry);
}

// Channel axis 2 of a 5-axis bottom: 2·3 images of 2 channels; axis −3 means the same.
TEST(Im2col, ChannelAxisAfterLeadingAxes) {
  for (const char* axis : {"2", "-3"}) {
    SCOPED_TRACE(axis);
    LayerFixture f(std::string("type: 'Im2col' convolution_param { axis: ") + axis +
                       " kernel_size: 3 pad: 1 stride: 2 }",
                   {{2, 3, 2, 5, 4}});
    ASSERT_EQ(f.top(0).shape(), (std::vector<int>{2, 3, 18, 3, 2}));
    CheckAgainstDirect(f, 6, 2, 5, 4, {3, 3, 1, 1, 2, 2, 1, 1});
  }
}

// One spatial axis: an image of height 1 with a 1-tall kernel.
TEST(Im2col, OneSpatialAxis) {
  LayerFixture f("type: 'Im2col' convolution_param { kernel_size: 3 dilation: 2 pad: 1 stride: 2 }", {{2, 3, 9}});
  CheckAgainstDirect(f, 2, 3, 1, 9, {1, 3, 0, 1, 1, 2, 1, 2});
}

TEST(Im2col, GradientCheck) {
  const char* const dilated = "type: 'Im2col' convolution_param { kernel_size: 2 pad: 1 stride: 2 dilation: 2 }";
  for (const char* text : {kRectangular, dilated}) {
    SCOPED_TRACE(text);
    LayerFixture f(text, {{2, 2, 5, 4}});
    f.FillBottoms();
    CheckGradient(f);
  }
}

// A new bottom shape (batch, channels and size) gives a new top shape and the new images' columns.
TEST(Im2col, ReshapeFollowsTheBottom) {
  LayerFixture f(kRectangular, {{1, 2, 5, 5}});
  ASSERT_EQ(f.top(0).shape(), (std::vector<int>{1, 12, 2, 6}));
  Blob x(std::vector<int>{3, 1, 6, 4}), y;
  f.layer().Reshape({&x}, {&y});
  ASSERT_EQ(y.shape(), (std::vector<int>{3, 6, 2, 5}));
  MemoryPlan plan;
  plan.RequestBlob(&x, true);
  plan.RequestBlob(&y, true);
  const std::unique_ptr<Arena> arena = plan.Allocate();
  FillGaussian(&x, f.rng());
  std::vector<float> expected(y.count(), 0.0f);
  ForEachCopy(3, 1, 6, 4, kRectangularGeometry, [&](int64_t xi, int64_t yi) { expected[yi] = x.data()[xi]; });
  f.layer().Forward({&x}, {&y});
  for (int64_t i = 0; i < y.count(); ++i) ASSERT_EQ(y.data()[i], expected[i]) << i;
}

TEST(Im2col, MistakesAreOneLineNamingTheLayer) {
  ExpectLayerError(ErrorLine("type: 'Im2col' convolution_param { stride: 2 }", {1, 1, 4, 4}), "kernel_size");
  ExpectLayerError(ErrorLine("type: 'Im2col' convolution_param { kernel_size: 5 }", {1, 1, 4, 4}),
                   "larger than the padded input height 4");
  ExpectLayerError(ErrorLine("type: 'Im2col' convolution_param { kernel_size: 3 dilation: 2 pad: 0 }", {1, 1, 9, 4}),
                   "dilated extent 5");
  ExpectLayerError(ErrorLine("type: 'Im2col' convolution_param { kernel_size: 0 }", {1, 1, 4, 4}), "positive");
  ExpectLayerError(ErrorLine("type: 'Im2col' convolution_param { kernel_size: 1 }", {1, 1, 2, 2, 2}),
                   "1 or 2 spatial axes");
  ExpectLayerError(ErrorLine("type: 'Im2col' convolution_param { kernel_size: 1 axis: 3 }", {1, 1, 2, 2}),
                   "1 or 2 spatial axes");
  ExpectLayerError(ErrorLine("type: 'Im2col' convolution_param { kernel_size: 1 axis: 4 }", {1, 1, 2, 2}),
                   "axis 4 is out of range");
  ExpectLayerError(ErrorLine("type: 'Im2col' convolution_param { kernel_h: 2 kernel_w: 1 }", {1, 3, 5}),
                   "kernel_h and kernel_w are for 2 spatial axes");
  ExpectLayerError(ErrorLine("type: 'Im2col' convolution_param { kernel_h: 2 }", {1, 1, 4, 4}), "give both");
  ExpectLayerError(ErrorLine("type: 'Im2col' convolution_param { kernel_size: 1 kernel_size: 2 kernel_size: 1 }",
                             {1, 1, 4, 4}),
                   "one value or one per spatial axis (2)");
  ExpectLayerError(ErrorLine("type: 'Im2col' convolution_param { kernel_size: 1 pad: 3000000000 }", {1, 1, 4, 4}),
                   "too large");
  EXPECT_THROW(LayerFixture("type: 'Im2col' convolution_param { kernel_size: 1 }", {{1, 1, 2, 2}, {1, 1, 2, 2}}),
               Error);
}

}  // namespace cortado::test
