// resize_test.cpp — NVIDIA Caffe's random resize and stretch in DataTransformer and the Data layer:
// against cv::resize of the interleaved image (as NVIDIA resizes it) and hand-computed values, the
// interpolation chosen for shrinking and for growing, allow_upscale, the stretch's sides, the draws
// (reproducible per record, different between records), records of several sizes (raw and PNG) and an
// image left smaller than the crop. Needs OpenCV (tests/CMakeLists.txt leaves it out without).
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <cmath>
#include <cstdio>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "cortado/batch_pipeline.hpp"  // RecordRng, RecordSeed
#include "cortado/data/lmdb.hpp"
#include "cortado/data/transformer.hpp"
#include "cortado/error.hpp"
#include "cortado/io.hpp"
#include "layers/pipeline_data_layer.hpp"  // DataLayer
#include "test_util.hpp"

namespace cortado::test {

namespace {

TransformationParameter Param(const std::string& text) {
  TransformationParameter p;
  ReadProtoFromTextString(text, &p);
  return p;
}

// An interleaved H×W image of `channels` uint8 values from a seeded generator.
cv::Mat RandomImage(int channels, int height, int width, uint32_t seed) {
  cv::Mat image(height, width, CV_8UC(channels));
  std::mt19937 rng(seed);
  for (int h = 0; h < height; ++h)
    for (int j = 0; j < width * channels; ++j) image.ptr<uint8_t>(h)[j] = static_cast<uint8_t>(rng() % 256);
  return image;
}

// A raw Datum (planar C×H×W) holding an interleaved 8-bit image.
Datum ToDatum(const cv::Mat& image) {
  Datum d;
  d.set_channels(image.channels()), d.set_height(image.rows), d.set_width(image.cols);
  std::string bytes;
  for (int c = 0; c < image.channels(); ++c)
    for (int h = 0; h < image.rows; ++h)
      for (int w = 0; w < image.cols; ++w)
        bytes.push_back(static_cast<char>(image.ptr<uint8_t>(h)[w * image.channels() + c]));
  d.set_data(bytes);
  return d;
}

// The k×k window at (top, left) of an interleaved image, as planar C×k×k floats.
std::vector<float> Window(const cv::Mat& image, int top, int left, int k) {
  std::vector<float> out;
  for (int c = 0; c < image.channels(); ++c)
    for (int h = 0; h < k; ++h)
      for (int w = 0; w < k; ++w) out.push_back(image.ptr<uint8_t>(top + h)[(left + w) * image.channels() + c]);
  return out;
}

// cv::resize to rows×cols, then the centre k×k window: what a TEST-phase resize to that size gives.
std::vector<float> ResizedCentre(const cv::Mat& image, int rows, int cols, int interpolation, int k) {
  cv::Mat resized;
  cv::resize(image, resized, cv::Size(cols, rows), 0, 0, interpolation);
  return Window(resized, (rows - k) / 2, (cols - k) / 2, k);
}

std::vector<float> Apply(const DataTransformer& t, const Datum& d, RecordRng& rng) {
  const std::vector<int> shape = t.OutputShape(d);
  std::vector<float> out(shape[0] * shape[1] * shape[2], -999.0f);
  t.Transform(d, out.data(), rng);
  return out;
}

const char* const kInterpolations[] = {"INTER_NEAREST", "INTER_LINEAR", "INTER_CUBIC", "INTER_AREA"};

bool Contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

// lower == upper == R: the shorter side becomes R, the other in proportion (6×9 → 4×6, 6×9 → 12×18),
// exactly as cv::resize of the interleaved BGR image gives it, with the _down algorithm when shrinking
// and the _up one when growing.
TEST(Resize, ToAKnownShorterSideAsCvResizeGivesIt) {
  const cv::Mat image = RandomImage(3, 6, 9, 5);
  const Datum d = ToDatum(image);
  for (int algo = 0; algo < 4; ++algo) {
    SCOPED_TRACE(kInterpolations[algo]);
    const std::string other = kInterpolations[(algo + 1) % 4];  // the direction not taken
    DataTransformer down(Param(std::string("img_rand_resize_lower: 4 img_rand_resize_upper: 4 crop_size: 4 ") +
                               "interpolation_algo_down: " + kInterpolations[algo] + " interpolation_algo_up: " + other),
                         TEST, "t");
    RecordRng rng(1);
    EXPECT_EQ(down.ResizedSize(6, 9, rng), (std::vector<int>{4, 6}));
    EXPECT_EQ(Apply(down, d, rng), ResizedCentre(image, 4, 6, algo, 4));
    DataTransformer up(Param(std::string("img_rand_resize_lower: 12 img_rand_resize_upper: 12 crop_size: 12 ") +
                             "allow_upscale: true interpolation_algo_up: " + kInterpolations[algo] +
                             " interpolation_algo_down: " + other),
                       TEST, "t");
    EXPECT_EQ(up.ResizedSize(6, 9, rng), (std::vector<int>{12, 18}));
    EXPECT_EQ(Apply(up, d, rng), ResizedCentre(image, 12, 18, algo, 12));
  }
}

// Values worked out by hand on tiny images.
TEST(Resize, HandCheckedValues) {
  std::vector<int> pixels;  // 4×4, pixel 40h + 4w
  for (int h = 0; h < 4; ++h)
    for (int w = 0; w < 4; ++w) pixels.push_back(40 * h + 4 * w);
  cv::Mat ramp(4, 4, CV_8UC1);
  for (int i = 0; i < 16; ++i) ramp.data[i] = static_cast<uint8_t>(pixels[i]);
  const Datum d = ToDatum(ramp);
  RecordRng rng(1);
  // Area: the mean of each 2×2 block, e.g. (0 + 4 + 40 + 44) / 4 = 22.
  DataTransformer area(Param("img_rand_resize_lower: 2 img_rand_resize_upper: 2 crop_size: 2 "
                             "interpolation_algo_down: INTER_AREA"), TEST, "t");
  EXPECT_EQ(Apply(area, d, rng), (std::vector<float>{22, 30, 102, 110}));
  // Nearest (the default when shrinking): source pixel 2·x, rows and columns 0 and 2.
  DataTransformer nearest(Param("img_rand_resize_lower: 2 img_rand_resize_upper: 2 crop_size: 2"), TEST, "t");
  EXPECT_EQ(Apply(nearest, d, rng), (std::vector<float>{0, 8, 80, 88}));
  // Linear, 2 → 4: source x = (x' + ½)/2 − ½ = −¼, ¼, ¾, 1¼ (clamped), so 0, 25, 75, 100 in each row,
  // for uint8 and for float datums alike.
  DataTransformer linear(Param("img_rand_resize_lower: 4 img_rand_resize_upper: 4 crop_size: 4 allow_upscale: true "
                               "interpolation_algo_up: INTER_LINEAR"), TEST, "t");
  const std::vector<float> rows = {0, 25, 75, 100, 0, 25, 75, 100, 0, 25, 75, 100, 0, 25, 75, 100};
  Datum two;
  two.set_channels(1), two.set_height(2), two.set_width(2), two.set_data(std::string("\0d\0d", 4));
  EXPECT_EQ(Apply(linear, two, rng), rows);
  two.clear_data();
  for (float v : {0.0f, 100.0f, 0.0f, 100.0f}) two.add_float_data(v);
  EXPECT_EQ(Apply(linear, two, rng), rows);
}

// Without allow_upscale neither side grows past the image's; with it, R = 8 makes 4×6 into 8×12.
TEST(Resize, WithoutAllowUpscaleASmallImageDoesNotGrow) {
  const cv::Mat image = RandomImage(1, 4, 6, 9);
  const Datum d = ToDatum(image);
  RecordRng rng(1);
  DataTransformer kept(Param("img_rand_resize_lower: 8 img_rand_resize_upper: 8 crop_size: 4"), TEST, "t");
  EXPECT_EQ(kept.ResizedSize(4, 6, rng), (std::vector<int>{4, 6}));
  EXPECT_EQ(Apply(kept, d, rng), Window(image, 0, 1, 4));  // the plain centre crop
  DataTransformer grown(Param("img_rand_resize_lower: 8 img_rand_resize_upper: 8 crop_size: 4 allow_upscale: true"),
                        TEST, "t");
  EXPECT_EQ(grown.ResizedSize(4, 6, rng), (std::vector<int>{8, 12}));
  // A stretch is clamped side by side: the height's ×1.5 is undone, the width's ×0.5 kept.
  DataTransformer stretched(Param("vertical_stretch_lower: 1.5 vertical_stretch_upper: 1.5 "
                                  "horizontal_stretch_lower: 0.5 horizontal_stretch_upper: 0.5 crop_size: 2"),
                            TEST, "t");
  EXPECT_EQ(stretched.ResizedSize(10, 20, rng), (std::vector<int>{10, 10}));
}

// The vertical stretch scales the height, the horizontal one the width, after the resize to R.
TEST(Resize, StretchScalesTheSidesAsSpecified) {
  const std::string base = "img_rand_resize_lower: 10 img_rand_resize_upper: 10 crop_size: 2 allow_upscale: true ";
  RecordRng rng(1);
  DataTransformer taller(Param(base + "vertical_stretch_lower: 2 vertical_stretch_upper: 2"), TRAIN, "t");
  EXPECT_EQ(taller.ResizedSize(20, 40, rng), (std::vector<int>{20, 20}));
  DataTransformer narrower(Param(base + "horizontal_stretch_lower: 0.5 horizontal_stretch_upper: 0.5"), TRAIN, "t");
  EXPECT_EQ(narrower.ResizedSize(20, 40, rng), (std::vector<int>{10, 10}));
  // Growing one side and shrinking the other resizes with the _up algorithm.
  const cv::Mat image = RandomImage(1, 10, 10, 3);
  DataTransformer both(Param(base + "vertical_stretch_lower: 2 vertical_stretch_upper: 2 horizontal_stretch_lower: "
                                    "0.5 horizontal_stretch_upper: 0.5 interpolation_algo_up: INTER_NEAREST "
                                    "interpolation_algo_down: INTER_AREA"),
                       TEST, "t");
  EXPECT_EQ(both.ResizedSize(10, 10, rng), (std::vector<int>{20, 5}));
  EXPECT_EQ(Apply(both, ToDatum(image), rng), ResizedCentre(image, 20, 5, cv::INTER_NEAREST, 2));
  // Random stretches: the size's draw, then V, then U, each lo + (hi − lo)·draw / (2^32 − 1) in double
  // from the float bounds (reversed bounds are sorted).
  DataTransformer random(Param("img_rand_resize_lower: 100 img_rand_resize_upper: 100 crop_size: 10 allow_upscale: "
                               "true vertical_stretch_lower: 0.7 vertical_stretch_upper: 1.3 "
                               "horizontal_stretch_lower: 1.2 horizontal_stretch_upper: 0.8"),
                         TRAIN, "t");
  std::set<int> heights, widths;
  for (int trial = 0; trial < 200; ++trial) {
    RecordRng copy = rng;
    copy();  // R: 100 + draw % 1
    const double v = double{0.7f} + (double{1.3f} - double{0.7f}) * copy() / 4294967295.0;
    const double u = double{0.8f} + (double{1.2f} - double{0.8f}) * copy() / 4294967295.0;
    const std::vector<int> size = random.ResizedSize(100, 200, rng);
    ASSERT_EQ(size, (std::vector<int>{int(std::lround(100.0f * float(v))), int(std::lround(200.0f * float(u)))}));
    ASSERT_EQ(copy, rng);  // three draws
    heights.insert(size[0]), widths.insert(size[1]);
  }
  EXPECT_LT(*heights.begin(), 75);
  EXPECT_GT(*heights.rbegin(), 125);
  EXPECT_LT(*widths.begin(), 170);
  EXPECT_GT(*widths.rbegin(), 230);
}

// A record's draws come from its own generator: the same seed gives the same output, records differ.
TEST(Resize, DrawsAreReproduciblePerRecordAndDifferBetweenRecords) {
  DataTransformer t(Param("img_rand_resize_lower: 6 img_rand_resize_upper: 14 vertical_stretch_lower: 0.7 "
                          "vertical_stretch_upper: 1.3 horizontal_stretch_lower: 0.7 horizontal_stretch_upper: 1.3 "
                          "crop_size: 5 mirror: true allow_upscale: true interpolation_algo_up: INTER_LINEAR"),
                    TRAIN, "t");
  const Datum d = ToDatum(RandomImage(3, 10, 10, 11));
  std::set<std::vector<int>> sizes;
  std::set<std::vector<float>> outputs;
  for (uint64_t record = 0; record < 20; ++record) {
    RecordRng a(RecordSeed(7, record)), b(RecordSeed(7, record)), c(RecordSeed(7, record));
    const std::vector<float> out = Apply(t, d, a);
    EXPECT_EQ(Apply(t, d, b), out);
    sizes.insert(t.ResizedSize(10, 10, c));
    outputs.insert(out);
  }
  EXPECT_GT(sizes.size(), 5u);
  EXPECT_GT(outputs.size(), 10u);
}

// The mean file's centre crop×crop window is subtracted from the resized crop (NVIDIA's rule).
TEST(Resize, MeanFileContributesItsCentreWindow) {
  const std::string mean_path = TempDir() + "/mean.binaryproto";
  BlobProto mean;  // 1×1×4×6, mean(h, w) = 10h + w
  for (int dim : {1, 1, 4, 6}) mean.mutable_shape()->add_dim(dim);
  for (int h = 0; h < 4; ++h)
    for (int w = 0; w < 6; ++w) mean.add_data(static_cast<float>(10 * h + w));
  WriteProtoToBinaryFile(mean, mean_path);
  DataTransformer t(Param("img_rand_resize_lower: 2 img_rand_resize_upper: 2 crop_size: 2 mean_file: '" + mean_path +
                          "'"), TEST, "t");
  cv::Mat flat(8, 8, CV_8UC1, cv::Scalar(100));
  RecordRng rng(1);
  EXPECT_EQ(Apply(t, ToDatum(flat), rng), (std::vector<float>{100 - 12, 100 - 13, 100 - 22, 100 - 23}));
}

namespace {

std::string DataText(const std::string& source, int batch, const std::string& transform) {
  return "name: 'data' type: 'Data' data_param { source: '" + source + "' backend: LMDB batch_size: " +
         std::to_string(batch) + " } transform_param { " + transform + " }";
}

// An LMDB of the images, keys "%08d", raw or PNG-encoded, label i.
std::string ImageLmdb(const std::vector<cv::Mat>& images, bool png) {
  const std::string path = NewTempDir() + "/db";
  LmdbWriter writer(path, "test");
  for (size_t i = 0; i < images.size(); ++i) {
    Datum d = ToDatum(images[i]);
    if (png) {
      std::vector<uint8_t> bytes;
      cv::imencode(".png", images[i], bytes);
      d.set_data(bytes.data(), bytes.size());
      d.set_encoded(true);
    }
    d.set_label(static_cast<int>(i));
    char key[16];
    std::snprintf(key, sizeof(key), "%08d", static_cast<int>(i));
    writer.Put(key, d.SerializeAsString());
  }
  writer.Finish();
  return path;
}

}  // namespace

// With a resize, records of several sizes make one batch of crop_size, raw or encoded.
TEST(Resize, DataLayerResizesRecordsOfSeveralSizes) {
  const std::vector<cv::Mat> images = {RandomImage(3, 6, 9, 1), RandomImage(3, 9, 6, 2), RandomImage(3, 5, 5, 3)};
  const std::vector<std::vector<int>> resized = {{4, 6}, {6, 4}, {4, 4}};
  for (bool png : {false, true}) {
    SCOPED_TRACE(png ? "PNG" : "raw");
    LayerFixture f("phase: TEST " + DataText(ImageLmdb(images, png), 3,
                                             "img_rand_resize_lower: 4 img_rand_resize_upper: 4 crop_size: 4 "
                                             "interpolation_algo_down: INTER_AREA"),
                   {}, 2);
    EXPECT_EQ(f.top(0).shape(), (std::vector<int>{3, 3, 4, 4}));
    f.Forward();
    for (int b = 0; b < 3; ++b) {
      const std::vector<float> got(f.top(0).data() + b * 48, f.top(0).data() + (b + 1) * 48);
      EXPECT_EQ(got, ResizedCentre(images[b], resized[b][0], resized[b][1], cv::INTER_AREA, 4)) << "record " << b;
    }
  }
}

// An image still smaller than the crop after its resize (allow_upscale off) is an error naming it.
TEST(Resize, ImageSmallerThanTheCropAfterItsResizeNamesTheRecord) {
  const std::string db = ImageLmdb({RandomImage(1, 6, 6, 1), RandomImage(1, 3, 5, 2)}, false);
  LayerFixture f(DataText(db, 2, "img_rand_resize_lower: 8 img_rand_resize_upper: 8 crop_size: 4"), {}, 2);
  const std::string message = ErrorOf([&] { f.Forward(); });
  EXPECT_TRUE(Contains(message, "layer data (Data): a record of 3×5 is 3×5 after its resize, smaller than crop_size 4 "
                                "(without allow_upscale no image grows)")) << message;
  EXPECT_TRUE(Contains(message, "record '00000001' of LMDB '" + db + "'")) << message;
}

}  // namespace cortado::test
