// window_data_test.cpp — the WindowData layer against hand-computed crops: a window of crop_size copied
// as it is (minus mean_value or a mean file's central square, times scale), background-then-foreground
// batches and their labels, mirror flips, context_pad and border clipping giving zero padding where
// Caffe's arithmetic puts it (the padding mirrored with the window), "square" mode, a bilinear upscale,
// seeds that repeat batches, and every mistake in a window file named by file and line. The images are
// PPM/PGM files written here, so the file builds without OpenCV; the layer's tests then skip, and one
// checks that the layer refuses to set up.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "cortado/error.hpp"
#include "cortado/image.hpp"  // BuiltWithImageSupport
#include "cortado/io.hpp"     // WriteProtoToBinaryFile
#include "test_util.hpp"

namespace cortado::test {

namespace {

#define SKIP_WITHOUT_OPENCV() \
  if (!BuiltWithImageSupport()) GTEST_SKIP() << "this build has no OpenCV"

// A pixel of a test image: channel c (BGR order, as the layer stores colour), row y, column x.
using PixelFn = std::function<int(int c, int y, int x)>;

// B = 10y + x, G = 100 + 10y + x, R = 200 + 10y + x: every pixel differs (images up to 5 rows, 10 columns).
int Distinct(int c, int y, int x) { return 100 * c + 10 * y + x; }

// Writes a binary PPM (3 channels, stored RGB) or PGM (1 channel).
void WritePnm(const std::string& path, int channels, int height, int width, const PixelFn& pixel) {
  std::string bytes = (channels == 3 ? "P6\n" : "P5\n") + std::to_string(width) + " " + std::to_string(height) + "\n255\n";
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      for (int c = channels - 1; c >= 0; --c) bytes += static_cast<char>(pixel(c, y, x));
  WriteFile(path, bytes);
}

std::string Layer(const std::string& source, const std::string& window_param, const std::string& transform) {
  return "name: 'w' type: 'WindowData' window_data_param { source: '" + source + "' " + window_param +
         " } transform_param { " + transform + " }";
}

// Item b of the data top, C×k×k.
std::vector<float> Item(LayerFixture& f, int b) {
  const size_t size = f.top(0).count() / f.top(0).shape(0);
  return std::vector<float>(f.top(0).data() + b * size, f.top(0).data() + (b + 1) * size);
}

// The C×k×k crop whose value at (c, y, x) is value(c, y, x).
std::vector<float> Crop(int channels, int k, const std::function<float(int, int, int)>& value) {
  std::vector<float> crop;
  for (int c = 0; c < channels; ++c)
    for (int y = 0; y < k; ++y)
      for (int x = 0; x < k; ++x) crop.push_back(value(c, y, x));
  return crop;
}

// The window file of one image: "# 0", its path, sizes and the given window lines.
std::string OneImage(const std::string& image, int channels, int height, int width,
                     const std::vector<std::string>& windows) {
  std::string text = "# 0\n" + image + "\n" + std::to_string(channels) + "\n" + std::to_string(height) + "\n" +
                     std::to_string(width) + "\n" + std::to_string(windows.size()) + "\n";
  for (const std::string& w : windows) text += w + "\n";
  return text;
}

}  // namespace

TEST(WindowData, WindowOfCropSizeIsItsPixelsMinusMeanValueTimesScale) {
  SKIP_WITHOUT_OPENCV();
  const std::string dir = TempDir();
  WritePnm(dir + "/a.ppm", 3, 5, 6, Distinct);
  // bg window at (0, 1)-(2, 3), fg (class 4) at (3, 2)-(5, 4): both 3×3 = crop_size.
  WriteFile(dir + "/w.txt", OneImage("a.ppm", 3, 5, 6, {"0 0.1 0 1 2 3", "4 0.8 3 2 5 4"}));
  LayerFixture f(Layer(dir + "/w.txt", "root_folder: '" + dir + "/' batch_size: 2 fg_fraction: 0.5",
                       "crop_size: 3 scale: 0.5 mean_value: 1 mean_value: 2 mean_value: 3"),
                 {}, 2);
  ASSERT_EQ(f.top(0).shape(), (std::vector<int>{2, 3, 3, 3}));
  ASSERT_EQ(f.top(1).shape(), (std::vector<int>{2}));
  f.Forward();
  EXPECT_EQ(f.top(1).data()[0], 0);
  EXPECT_EQ(f.top(1).data()[1], 4);
  EXPECT_EQ(Item(f, 0), Crop(3, 3, [](int c, int y, int x) { return (Distinct(c, 1 + y, x) - (c + 1)) * 0.5f; }));
  EXPECT_EQ(Item(f, 1), Crop(3, 3, [](int c, int y, int x) { return (Distinct(c, 2 + y, 3 + x) - (c + 1)) * 0.5f; }));
}

TEST(WindowData, MeanFileGivesItsCentralCropSquareAtTheMatchingPixel) {
  SKIP_WITHOUT_OPENCV();
  const std::string dir = TempDir();
  WritePnm(dir + "/a.ppm", 3, 5, 6, Distinct);
  WriteFile(dir + "/w.txt", OneImage("a.ppm", 3, 5, 6, {"0 0 2 1 4 3"}));
  // A 1×3×5×5 mean, value 7c + 0.5y + 0.25x: the layer takes rows and columns 1..3.
  BlobProto mean;
  for (int d : {1, 3, 5, 5}) mean.mutable_shape()->add_dim(d);
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < 5; ++y)
      for (int x = 0; x < 5; ++x) mean.add_data(7.0f * c + 0.5f * y + 0.25f * x);
  WriteProtoToBinaryFile(mean, dir + "/mean.binaryproto");
  LayerFixture f(Layer(dir + "/w.txt", "root_folder: '" + dir + "/' batch_size: 1 fg_fraction: 0",
                       "crop_size: 3 scale: 2 mean_file: '" + dir + "/mean.binaryproto'"),
                 {}, 2);
  f.Forward();
  EXPECT_EQ(Item(f, 0), Crop(3, 3, [](int c, int y, int x) {
              return (Distinct(c, 1 + y, 2 + x) - (7.0f * c + 0.5f * (y + 1) + 0.25f * (x + 1))) * 2;
            }));
}

TEST(WindowData, BatchesAreBackgroundThenForegroundWithTheirLabels) {
  SKIP_WITHOUT_OPENCV();
  const std::string dir = TempDir();
  // Two images of 1×1 windows whose pixels tell them apart (B = 10y + x + 50·image, G = B + 100).
  WritePnm(dir + "/a.ppm", 3, 4, 4, Distinct);
  WritePnm(dir + "/b.ppm", 3, 4, 4, [](int c, int y, int x) { return Distinct(c, y, x) + (c < 2 ? 50 : 0); });
  WriteFile(dir + "/w.txt",
            "# 0\na.ppm\n3 4 4\n4\n2 0.9 0 0 0 0\n0 0.2 1 0 1 0\n7 0.4 2 0 2 0\n0 0.29 3 0 3 0\n"
            "# 1\nb.ppm\n3 4 4\n2\n5 0.5 0 1 0 1\n3 0.1 1 1 1 1\n");
  // fg ≥ 0.5: (a 0,0) class 2, (b 0,1) class 5. bg < 0.3: (a 1,0), (a 3,0), (b 1,1), whose class 3 is
  // dropped for 0. (a 2,0), overlap 0.4, is neither.
  const std::string param = "root_folder: '" + dir + "/' batch_size: 5 fg_fraction: 0.3 fg_threshold: 0.5 bg_threshold: 0.3";
  LayerFixture f(Layer(dir + "/w.txt", param, "crop_size: 1"), {}, 2);
  ASSERT_EQ(f.top(0).shape(), (std::vector<int>{5, 3, 1, 1}));
  // int(5 · 0.3) = 1 foreground window, last. An item's blue value names its window: 10y + x (+ 50).
  const std::set<float> background = {1, 3, 61}, foreground = {0, 60};
  std::set<float> seen_bg, seen_fg;
  for (int step = 0; step < 20; ++step) {
    f.Forward();
    for (int b = 0; b < 5; ++b) {
      const float blue = f.top(0).data()[b * 3], label = f.top(1).data()[b];
      EXPECT_EQ(f.top(0).data()[b * 3 + 1], blue + 100);  // green: the same pixel
      if (b < 4) {
        EXPECT_TRUE(background.count(blue)) << "item " << b << " is window " << blue;
        EXPECT_EQ(label, 0) << "item " << b;
        seen_bg.insert(blue);
      } else {
        ASSERT_TRUE(foreground.count(blue)) << "item " << b << " is window " << blue;
        EXPECT_EQ(label, blue == 0 ? 2 : 5);
        seen_fg.insert(blue);
      }
    }
  }
  EXPECT_EQ(seen_bg, background) << "80 draws from 3 background windows should reach each";
  EXPECT_EQ(seen_fg, foreground);
}

TEST(WindowData, MirrorFlipsSomeWindowsHorizontally) {
  SKIP_WITHOUT_OPENCV();
  const std::string dir = TempDir();
  WritePnm(dir + "/a.ppm", 3, 5, 6, Distinct);
  WriteFile(dir + "/w.txt", OneImage("a.ppm", 3, 5, 6, {"0 0 1 1 3 3"}));
  LayerFixture f(Layer(dir + "/w.txt", "root_folder: '" + dir + "/' batch_size: 8 fg_fraction: 0",
                       "crop_size: 3 mirror: true"),
                 {}, 2);
  const auto plain = Crop(3, 3, [](int c, int y, int x) { return float(Distinct(c, 1 + y, 1 + x)); });
  const auto flipped = Crop(3, 3, [](int c, int y, int x) { return float(Distinct(c, 1 + y, 3 - x)); });
  int flips = 0;
  for (int step = 0; step < 4; ++step) {
    f.Forward();
    for (int b = 0; b < 8; ++b) {
      const std::vector<float> item = Item(f, b);
      EXPECT_TRUE(item == plain || item == flipped) << "item " << b << " of step " << step;
      flips += item == flipped;
    }
  }
  EXPECT_GT(flips, 4) << "32 fair coin flips";
  EXPECT_LT(flips, 28);
}

// crop 6, context_pad 1: windows grow by 6 / 4 = 1.5 about their centre. The 4×4 window at (0, 0) of an
// 8×8 image becomes (−1, −1)-(5, 5), 7×7, clipped to (0, 0)-(5, 5): 6 pixels warped by 6/7 to
// round(36/7) = 5, after round(6/7) = 1 pixel of padding (or none, mirrored: the padding moves to the
// right, round(0) = 0). The 4×4 window at (4, 4) becomes (3, 3)-(9, 9), clipped to (3, 3)-(7, 7): 5
// pixels → round(30/7) = 4 at offset 0 (mirrored: the 2 cut columns → round(12/7) = 2 on the left).
// The image is one colour per channel, so every warped pixel is that colour.
TEST(WindowData, ContextPadAndBorderClippingLeaveZeroPaddingWhereCaffePutsIt) {
  SKIP_WITHOUT_OPENCV();
  const std::string dir = TempDir();
  WritePnm(dir + "/a.ppm", 3, 8, 8, [](int c, int, int) { return 10 * (c + 1); });
  WriteFile(dir + "/w.txt", OneImage("a.ppm", 3, 8, 8, {"1 1 0 0 3 3", "0 0 4 4 7 7"}));
  // In the window (10c + 10 − 4) · 0.5; outside it 0, untouched by mean and scale.
  auto block = [](int rows_from, int rows_to, int cols_from, int cols_to) {
    return Crop(3, 6, [=](int c, int y, int x) {
      return y >= rows_from && y <= rows_to && x >= cols_from && x <= cols_to ? (10.0f * (c + 1) - 4) * 0.5f : 0.0f;
    });
  };
  const std::string param = "root_folder: '" + dir + "/' batch_size: 2 fg_fraction: 0.5 context_pad: 1";
  {
    LayerFixture f(Layer(dir + "/w.txt", param, "crop_size: 6 mean_value: 4 scale: 0.5"), {}, 2);
    f.Forward();
    EXPECT_EQ(Item(f, 0), block(0, 3, 0, 3)) << "the bottom-right window (background)";
    EXPECT_EQ(Item(f, 1), block(1, 5, 1, 5)) << "the top-left window (foreground)";
  }
  LayerFixture f(Layer(dir + "/w.txt", param, "crop_size: 6 mean_value: 4 scale: 0.5 mirror: true"), {}, 2);
  int mirrored[2] = {0, 0};
  for (int step = 0; step < 12; ++step) {
    f.Forward();
    const std::vector<float> bottom_right = Item(f, 0), top_left = Item(f, 1);
    EXPECT_TRUE(bottom_right == block(0, 3, 0, 3) || bottom_right == block(0, 3, 2, 5)) << "step " << step;
    EXPECT_TRUE(top_left == block(1, 5, 1, 5) || top_left == block(1, 5, 0, 4)) << "step " << step;
    mirrored[0] += bottom_right == block(0, 3, 2, 5);
    mirrored[1] += top_left == block(1, 5, 0, 4);
  }
  EXPECT_GT(mirrored[0], 0);
  EXPECT_LT(mirrored[0], 12);
  EXPECT_GT(mirrored[1], 0);
  EXPECT_LT(mirrored[1], 12);
}

// "square" with context_pad 0: the window is made square about its centre, half side max(w, h) / 2,
// and Caffe's inclusive rounding takes max(w, h) + 1 pixels. The 2×4 window at (3, 0) becomes
// (2, 0)-(6, 4), 5×5 = crop_size: copied as it is. The 2×4 window at (0, 0), centre x 1, becomes
// (−1, 0)-(3, 4): clipped to columns 0..3, copied (scale 5/5) after one column of padding.
TEST(WindowData, SquareModeSquaresTheWindowAndPadsWhereItLeavesTheImage) {
  SKIP_WITHOUT_OPENCV();
  const std::string dir = TempDir();
  WritePnm(dir + "/a.ppm", 3, 5, 8, Distinct);
  WriteFile(dir + "/w.txt", OneImage("a.ppm", 3, 5, 8, {"0 0 3 0 4 3", "2 1 0 0 1 3"}));
  LayerFixture f(Layer(dir + "/w.txt", "root_folder: '" + dir + "/' batch_size: 2 fg_fraction: 0.5 crop_mode: 'square'",
                       "crop_size: 5"),
                 {}, 2);
  f.Forward();
  EXPECT_EQ(Item(f, 0), Crop(3, 5, [](int c, int y, int x) { return float(Distinct(c, y, 2 + x)); }));
  EXPECT_EQ(Item(f, 1), Crop(3, 5, [](int c, int y, int x) { return x == 0 ? 0.0f : float(Distinct(c, y, x - 1)); }));
  EXPECT_EQ(f.top(1).data()[1], 2);
}

// A 2×2 grey window warped to 4×4: bilinear weights of the far pixel 0, 1/4, 3/4, 1 (pixel centres
// aligned, edges clamped, as cv::resize INTER_LINEAR). Pixels 100x + 40y → 100·w(x) + 40·w(y).
TEST(WindowData, WarpIsABilinearResizeOfTheWindow) {
  SKIP_WITHOUT_OPENCV();
  const std::string dir = TempDir();
  // Outside the window the pixels are 250: a resize that read past the window would show them.
  WritePnm(dir + "/g.pgm", 1, 3, 3, [](int, int y, int x) { return x < 2 && y < 2 ? 100 * x + 40 * y : 250; });
  WriteFile(dir + "/w.txt", OneImage("g.pgm", 1, 3, 3, {"0 0 0 0 1 1"}));
  LayerFixture f(Layer(dir + "/w.txt", "root_folder: '" + dir + "/' batch_size: 1 fg_fraction: 0", "crop_size: 4"),
                 {}, 2);
  ASSERT_EQ(f.top(0).shape(), (std::vector<int>{1, 1, 4, 4}));
  f.Forward();
  const float w[4] = {0, 0.25f, 0.75f, 1};
  EXPECT_EQ(Item(f, 0), Crop(1, 4, [&](int, int y, int x) { return 100 * w[x] + 40 * w[y]; }));
}

TEST(WindowData, CachedImagesGiveTheSameBatchesAndAFixedSeedRepeatsThem) {
  SKIP_WITHOUT_OPENCV();
  const std::string dir = TempDir();
  WritePnm(dir + "/a.ppm", 3, 5, 6, Distinct);
  WritePnm(dir + "/b.ppm", 3, 4, 7, [](int c, int y, int x) { return 255 - Distinct(c, y, x); });
  WriteFile(dir + "/w.txt",
            "# 0 a.ppm 3 5 6 3\n1 0.9 0 0 3 2\n0 0.1 1 1 5 4\n0 0.2 2 0 4 4\n"
            "# 1 b.ppm 3 4 7 2\n2 0.7 1 0 6 3\n0 0 0 0 2 1\n");  // any white space separates tokens
  auto batches = [&](uint32_t seed, bool cache) {
    const std::string param = "root_folder: '" + dir + "/' batch_size: 4 context_pad: 1 cache_images: " +
                              (cache ? "true" : "false");
    LayerFixture f(Layer(dir + "/w.txt", param, "crop_size: 5 mirror: true"), {}, 2, seed);
    std::vector<float> out;
    for (int step = 0; step < 3; ++step) {
      f.Forward();
      out.insert(out.end(), f.top(0).data(), f.top(0).data() + f.top(0).count());
      out.insert(out.end(), f.top(1).data(), f.top(1).data() + 4);
    }
    return out;
  };
  const std::vector<float> first = batches(11, false);
  EXPECT_EQ(batches(11, false), first);
  EXPECT_EQ(batches(11, true), first);
  EXPECT_NE(batches(12, false), first);
}

// ---- mistakes ---------------------------------------------------------------------------------------

namespace {

// Sets up a layer (batch_size 4, crop_size 3) over `text` as the window file.
void SetUpOver(const std::string& dir, const std::string& text, const std::string& param = "") {
  WriteFile(dir + "/w.txt", text);
  LayerFixture f(Layer(dir + "/w.txt", "root_folder: '" + dir + "/' batch_size: 4 " + param, "crop_size: 3"), {}, 2);
}

std::string WindowFileError(const std::string& dir, const std::string& text, const std::string& param = "") {
  return ErrorOf([&] { SetUpOver(dir, text, param); });
}

}  // namespace

TEST(WindowData, EveryMistakeInTheWindowFileNamesFileAndLine) {
  SKIP_WITHOUT_OPENCV();
  const std::string dir = TempDir();
  WritePnm(dir + "/a.ppm", 3, 5, 6, Distinct);
  WritePnm(dir + "/b.ppm", 3, 5, 6, Distinct);
  const std::string good = "# 0\na.ppm\n3\n5\n6\n2\n1 0.9 0 0 2 2\n0 0.1 1 1 3 3\n";
  ASSERT_NO_THROW(SetUpOver(dir, good));
  const std::string w = dir + "/w.txt:";
  struct Case {
    std::string text, where, what;
  };
  const std::vector<Case> cases = {
      {"# 0\nmissing.ppm\n3\n5\n6\n0\n", w + "2:", "missing.ppm' does not exist"},
      {good + "# 1\nb.ppm\n3\n5\n6\n3\n1 0.9 0 0 2 2\n0 0.1 1 1 3 3\n", w + "16:", "declares 3 windows but its block holds 2"},
      {good + "# 1\nb.ppm\n3\n5\n6\n1\n1 0.9 0 0 2 2\n0 0.1 1 1 3 3\n", w + "16:", "more windows than the 1 image 1 declares"},
      {"# 0\na.ppm\n3\n5\n6\n2\n1 0.9 0 0 2 2\n0 0.1 1 one 3 3\n", w + "8:", "expected the window's y1 (an integer), got 'one'"},
      {"# 0\na.ppm\n3\n5\n6\n1\n1 high 0 0 2 2\n", w + "7:", "expected the window's overlap (a number), got 'high'"},
      {"# 0\na.ppm\n3\nfive\n6\n1\n", w + "4:", "expected the image's height"},
      {good + "# 1\nb.ppm\n3\n5\n6\n1\n0 0.1 4 2 6 4\n", w + "15:", "lies outside image"},
      {good + "# 1\nb.ppm\n3\n5\n6\n1\n0 0.1 -1 2 1 4\n", w + "15:", "lies outside image"},
      {good + "# 1\nb.ppm\n3\n5\n6\n1\n0 0.1 3 2 2 4\n", w + "15:", "is empty"},
      {"# 0\na.ppm\n3\n5\n6\n2\n0 0.9 0 0 2 2\n0 0.1 1 1 3 3\n", w + "7:", "needs a class index > 0"},
      {good + "# 2\nb.ppm\n3\n5\n6\n0\n", w + "9:", "image index 2 is out of order: expected 1"},
      {good + "# 1\nb.ppm\n1\n5\n6\n0\n", w + "11:", "image 1 has 1 channels but image 0 has 3"},
      {good + "# 1\nb.ppm\n3\n5\n", w + "12:", "the file ends where the image's width should be"},
      {good + "# 1\nb.ppm\n3\n5\n6\n2\n1 0.9 0 0 2 2\n", w + "15:", "declares 2 windows but its block holds 1"},
      {"0\na.ppm\n", w + "1:", "expected '# 0' to start image 0's block"},
  };
  for (const Case& c : cases) {
    const std::string error = WindowFileError(dir, c.text);
    EXPECT_NE(error.find("layer w (WindowData): " + c.where + " "), std::string::npos) << c.where << " " << error;
    EXPECT_NE(error.find(c.what), std::string::npos) << error;
  }
  EXPECT_NE(WindowFileError(dir, "").find("w.txt: the window file holds no images"), std::string::npos);
  const std::string none = ErrorOf([&] {
    LayerFixture f(Layer(dir + "/none.txt", "batch_size: 1", "crop_size: 3"), {}, 2);
  });
  EXPECT_NE(none.find("cannot open window file '" + dir + "/none.txt'"), std::string::npos) << none;
  // No foreground (or background) window while the batch takes some: the file is named.
  const std::string no_fg = WindowFileError(dir, "# 0\na.ppm\n3\n5\n6\n1\n0 0.1 1 1 3 3\n");
  EXPECT_NE(no_fg.find("window file '" + dir + "/w.txt' holds no foreground windows"), std::string::npos) << no_fg;
  // A batch of background windows only needs no foreground window.
  EXPECT_NO_THROW(SetUpOver(dir, "# 0\na.ppm\n3\n5\n6\n1\n0 0.1 1 1 3 3\n", "fg_fraction: 0"));
  const std::string no_bg = WindowFileError(dir, "# 0\na.ppm\n3\n5\n6\n1\n1 0.9 1 1 3 3\n");
  EXPECT_NE(no_bg.find("holds no background windows"), std::string::npos) << no_bg;
}

TEST(WindowData, AnImageOfAnotherSizeThanDeclaredIsNamedWithItsLine) {
  SKIP_WITHOUT_OPENCV();
  const std::string dir = TempDir();
  WritePnm(dir + "/a.ppm", 3, 5, 6, Distinct);
  WriteFile(dir + "/w.txt", OneImage("a.ppm", 3, 6, 6, {"0 0.1 1 1 3 3"}));
  const std::string param = "root_folder: '" + dir + "/' batch_size: 1 fg_fraction: 0";
  LayerFixture f(Layer(dir + "/w.txt", param, "crop_size: 3"), {}, 2);
  const std::string error = ErrorOf([&] { f.Forward(); });
  EXPECT_NE(error.find("w.txt:2: image '" + dir + "/a.ppm' is 5×6 (height × width) but the window file declares 6×6"),
            std::string::npos)
      << error;
  const std::string cached = ErrorOf([&] { LayerFixture g(Layer(dir + "/w.txt", param + " cache_images: true", "crop_size: 3"), {}, 2); });
  EXPECT_NE(cached.find("w.txt:2: image"), std::string::npos) << cached;
}

// A small damaged image whose header claims 20000×20000 pixels is refused by one line naming it and its
// window-file line, before OpenCV allocates what it claims (1.2 GB), whether read by the workers or
// cached at setup.
TEST(WindowData, AnImageWhoseHeaderClaimsTooManyPixelsIsRefusedNamingIt) {
  SKIP_WITHOUT_OPENCV();
  const std::string dir = TempDir();
  // A PNG's signature and IHDR chunk (8-bit RGB, 20000×20000 = 0x4E20 each) and no image data.
  std::string png("\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR\0\0\x4e\x20\0\0\x4e\x20\x08\x02\0\0\0\0\0\0\0", 33);
  WriteFile(dir + "/big.png", png);
  WriteFile(dir + "/w.txt", OneImage("big.png", 3, 20000, 20000, {"0 0.1 1 1 3 3"}));
  const std::string param = "root_folder: '" + dir + "/' batch_size: 1 fg_fraction: 0";
  const std::string expected = "layer w (WindowData): " + dir + "/w.txt:2: cannot read image '" + dir +
                               "/big.png': the PNG image claims 20000×20000 pixels, more than the 67108864 Cortado "
                               "decodes (a damaged header?)";
  LayerFixture f(Layer(dir + "/w.txt", param, "crop_size: 3"), {}, 2);
  EXPECT_EQ(ErrorOf([&] { f.Forward(); }), expected);
  EXPECT_EQ(ErrorOf([&] { LayerFixture g(Layer(dir + "/w.txt", param + " cache_images: true", "crop_size: 3"), {}, 2); }),
            expected);
}

TEST(WindowData, ParameterMistakesAreRefusedAtSetup) {
  SKIP_WITHOUT_OPENCV();
  const std::string dir = TempDir();
  WritePnm(dir + "/a.ppm", 3, 5, 6, Distinct);
  WriteFile(dir + "/w.txt", OneImage("a.ppm", 3, 5, 6, {"1 0.9 0 0 2 2", "0 0.1 1 1 3 3"}));
  auto error = [&](const std::string& param, const std::string& transform) {
    return ErrorOf([&] {
      LayerFixture f(Layer(dir + "/w.txt", "root_folder: '" + dir + "/' batch_size: 2 " + param, transform), {}, 2);
    });
  };
  EXPECT_NE(error("", "").find("set transform_param.crop_size"), std::string::npos);
  EXPECT_NE(error("crop_size: 3", "").find("legacy; move them to transform_param"), std::string::npos);
  EXPECT_NE(error("scale: 2", "crop_size: 3").find("legacy; move them to transform_param"), std::string::npos);
  EXPECT_NE(error("crop_mode: 'fit'", "crop_size: 3").find("crop_mode is 'fit'"), std::string::npos);
  EXPECT_NE(error("context_pad: 2", "crop_size: 4").find("crop_size must exceed 2·context_pad"), std::string::npos);
  EXPECT_NE(error("", "crop_size: 3 mean_value: 1 mean_value: 2").find("mean_value entries"), std::string::npos);
  EXPECT_NE(error("fg_fraction: 1.5", "crop_size: 3").find("fg_fraction 1.5 is outside [0, 1]"), std::string::npos);
  // A mean 5 wide but 2 high has no central 3×3 square (offset (5 − 3) / 2 = 1 on both axes).
  BlobProto mean;
  for (int d : {1, 3, 2, 5}) mean.mutable_shape()->add_dim(d);
  for (int i = 0; i < 30; ++i) mean.add_data(1.0f);
  WriteProtoToBinaryFile(mean, dir + "/mean.binaryproto");
  const std::string flat = error("", "crop_size: 3 mean_file: '" + dir + "/mean.binaryproto'");
  EXPECT_NE(flat.find("mean.binaryproto' has shape 1×3×2×5; WindowData takes the central 3×3"), std::string::npos)
      << flat;
}

TEST(WindowData, WithoutOpenCVTheLayerRefusesToSetUp) {
  if (BuiltWithImageSupport()) GTEST_SKIP() << "this build has OpenCV: the other tests run the layer";
  const std::string dir = TempDir();
  WriteFile(dir + "/w.txt", OneImage("a.ppm", 3, 5, 6, {"0 0.1 1 1 3 3"}));
  const std::string error = ErrorOf([&] {
    LayerFixture f(Layer(dir + "/w.txt", "batch_size: 1 fg_fraction: 0", "crop_size: 3"), {}, 2);
  });
  EXPECT_NE(error.find("layer w (WindowData): this build of Cortado has no image support"), std::string::npos) << error;
}

}  // namespace cortado::test
