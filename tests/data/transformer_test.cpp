// transformer_test.cpp — DataTransformer against hand-computed values: scale, mean_value, mean_file,
// centre and random crops, mirror, float_data datums; and its errors, the resize's set-up errors among
// them (the resize itself: resize_test.cpp).
#include <string>
#include <vector>

#include "cortado/data/transformer.hpp"
#include "cortado/error.hpp"
#include "cortado/image.hpp"  // BuiltWithImageSupport
#include "cortado/io.hpp"
#include "test_util.hpp"

namespace cortado::test {

namespace {

Datum MakeDatum(int c, int h, int w, const std::vector<int>& pixels) {
  Datum d;
  d.set_channels(c);
  d.set_height(h);
  d.set_width(w);
  std::string bytes;
  for (int p : pixels) bytes.push_back(static_cast<char>(p));
  d.set_data(bytes);
  return d;
}

// A C×H×W datum whose pixel (c, h, w) is 100·c + 10·h + w.
Datum Ramp(int c, int h, int w) {
  std::vector<int> pixels;
  for (int ci = 0; ci < c; ++ci)
    for (int hi = 0; hi < h; ++hi)
      for (int wi = 0; wi < w; ++wi) pixels.push_back(100 * ci + 10 * hi + wi);
  return MakeDatum(c, h, w, pixels);
}

TransformationParameter Param(const std::string& text) {
  TransformationParameter p;
  ReadProtoFromTextString(text, &p);
  return p;
}

std::vector<float> Apply(const DataTransformer& t, const Datum& d, RecordRng& rng) {
  const std::vector<int> shape = t.OutputShape(d);
  std::vector<float> out(shape[0] * shape[1] * shape[2], -999.0f);
  t.Transform(d, out.data(), rng);
  return out;
}

bool Contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST(Transformer, ScaleAndPerChannelMeanValue) {
  DataTransformer t(Param("scale: 0.5 mean_value: 10 mean_value: 20"), TRAIN, "t");
  const Datum d = MakeDatum(2, 1, 3, {10, 12, 30, 20, 21, 255});
  RecordRng rng(1);
  const std::vector<float> expected = {0.0f, 1.0f, 10.0f, 0.0f, 0.5f, 117.5f};
  EXPECT_EQ(Apply(t, d, rng), expected);
  EXPECT_EQ(t.OutputShape(d), (std::vector<int>{2, 1, 3}));
}

TEST(Transformer, OneMeanValueForEveryChannel) {
  DataTransformer t(Param("mean_value: 5"), TEST, "t");
  RecordRng rng(1);
  const std::vector<float> expected = {-5.0f, 0.0f, 5.0f, 95.0f};
  EXPECT_EQ(Apply(t, MakeDatum(2, 2, 1, {0, 5, 10, 100}), rng), expected);
}

TEST(Transformer, MeanFileWithCentreCropInTest) {
  const std::string mean_path = TempDir() + "/mean.binaryproto";
  BlobProto mean;  // 1×1×4×5, mean(h, w) = h
  for (int d : {1, 1, 4, 5}) mean.mutable_shape()->add_dim(d);
  for (int h = 0; h < 4; ++h)
    for (int w = 0; w < 5; ++w) mean.add_data(static_cast<float>(h));
  WriteProtoToBinaryFile(mean, mean_path);
  DataTransformer t(Param("crop_size: 2 scale: 2 mean_file: '" + mean_path + "'"), TEST, "t");
  const Datum d = Ramp(1, 4, 5);
  EXPECT_EQ(t.OutputShape(d), (std::vector<int>{1, 2, 2}));
  // Centre: rows 1–2, columns 1–2; pixel 10h + w, mean h → (9h + w)·2.
  RecordRng rng(1);
  const std::vector<float> expected = {20.0f, 22.0f, 38.0f, 40.0f};
  EXPECT_EQ(Apply(t, d, rng), expected);
}

TEST(Transformer, LegacyShapedMeanFile) {
  const std::string mean_path = TempDir() + "/mean.binaryproto";
  BlobProto mean;
  mean.set_num(1), mean.set_channels(2), mean.set_height(1), mean.set_width(2);
  for (float v : {1.0f, 2.0f, 3.0f, 4.0f}) mean.add_data(v);
  WriteProtoToBinaryFile(mean, mean_path);
  DataTransformer t(Param("mean_file: '" + mean_path + "'"), TRAIN, "t");
  RecordRng rng(1);
  const std::vector<float> expected = {9.0f, 18.0f, 27.0f, 36.0f};
  EXPECT_EQ(Apply(t, MakeDatum(2, 1, 2, {10, 20, 30, 40}), rng), expected);
}

TEST(Transformer, RandomCropInTrainUsesTheDocumentedDraws) {
  DataTransformer t(Param("crop_size: 2"), TRAIN, "t");
  const Datum d = Ramp(2, 4, 5);
  RecordRng rng(42);
  for (int trial = 0; trial < 10; ++trial) {
    RecordRng copy = rng;
    const int h_off = copy() % 3, w_off = copy() % 4;
    const std::vector<float> out = Apply(t, d, rng);
    for (int c = 0; c < 2; ++c)
      for (int h = 0; h < 2; ++h)
        for (int w = 0; w < 2; ++w)
          ASSERT_EQ(out[(c * 2 + h) * 2 + w], 100 * c + 10 * (h + h_off) + w + w_off);
    EXPECT_EQ(copy, rng);  // exactly two draws
  }
}

TEST(Transformer, MirrorFlipsRowsWhenTheDrawSaysSo) {
  DataTransformer t(Param("mirror: true"), TRAIN, "t");
  const Datum d = MakeDatum(1, 2, 3, {1, 2, 3, 4, 5, 6});
  const std::vector<float> plain = {1, 2, 3, 4, 5, 6}, flipped = {3, 2, 1, 6, 5, 4};
  int flips = 0;
  RecordRng rng(7);
  for (int trial = 0; trial < 32; ++trial) {
    RecordRng copy = rng;
    const bool flip = copy() % 2;
    flips += flip;
    EXPECT_EQ(Apply(t, d, rng), flip ? flipped : plain);
  }
  EXPECT_GT(flips, 0);
  EXPECT_LT(flips, 32);
}

TEST(Transformer, MirrorWithCropFlipsTheWindow) {
  DataTransformer t(Param("mirror: true crop_size: 2"), TRAIN, "t");
  const Datum d = Ramp(1, 3, 3);
  RecordRng rng(3);
  for (int trial = 0; trial < 16; ++trial) {
    RecordRng copy = rng;
    const bool flip = copy() % 2;
    const int h_off = copy() % 2, w_off = copy() % 2;
    const std::vector<float> out = Apply(t, d, rng);
    for (int h = 0; h < 2; ++h)
      for (int w = 0; w < 2; ++w)
        ASSERT_EQ(out[h * 2 + (flip ? 1 - w : w)], 10 * (h + h_off) + w + w_off);
  }
}

TEST(Transformer, NoMirrorAndNoDrawsInTest) {
  DataTransformer t(Param("mirror: true"), TEST, "t");
  RecordRng rng(7), before = rng;
  for (int trial = 0; trial < 8; ++trial)
    EXPECT_EQ(Apply(t, MakeDatum(1, 1, 2, {1, 2}), rng), (std::vector<float>{1, 2}));
  EXPECT_EQ(rng, before);
}

TEST(Transformer, FloatDataDatums) {
  DataTransformer t(Param("scale: 2 mean_value: 0.5"), TEST, "t");
  Datum d;
  d.set_channels(1), d.set_height(1), d.set_width(3);
  for (float v : {-1.5f, 0.5f, 2.25f}) d.add_float_data(v);
  RecordRng rng(1);
  const std::vector<float> expected = {-4.0f, 0.0f, 3.5f};
  EXPECT_EQ(Apply(t, d, rng), expected);
}

TEST(Transformer, CropLargerThanTheImage) {
  DataTransformer t(Param("crop_size: 5"), TRAIN, "t");
  const Datum d = Ramp(1, 4, 6);
  EXPECT_EQ(ErrorOf([&] { t.OutputShape(d); }), "t: crop_size 5 is larger than the images (4×6)");
  std::vector<float> out(100);
  RecordRng rng(1);
  EXPECT_NE(ErrorOf([&] { t.Transform(d, out.data(), rng); }), "");
}

TEST(Transformer, MeanFileOfTheWrongShape) {
  const std::string mean_path = TempDir() + "/mean.binaryproto";
  BlobProto mean;
  for (int d : {1, 3, 2, 2}) mean.mutable_shape()->add_dim(d);
  for (int i = 0; i < 12; ++i) mean.add_data(0.0f);
  WriteProtoToBinaryFile(mean, mean_path);
  DataTransformer t(Param("mean_file: '" + mean_path + "'"), TEST, "t");
  const std::string message = ErrorOf([&] { t.OutputShape(Ramp(1, 2, 2)); });
  EXPECT_TRUE(Contains(message, mean_path)) << message;
  EXPECT_TRUE(Contains(message, "3×2×2")) << message;
  EXPECT_TRUE(Contains(message, "1×2×2")) << message;
}

TEST(Transformer, MeanFileAndMeanValueAreExclusive) {
  const std::string message =
      ErrorOf([] { DataTransformer t(Param("mean_file: 'm.binaryproto' mean_value: 1"), TRAIN, "t"); });
  EXPECT_TRUE(Contains(message, "both mean_file and mean_value")) << message;
}

TEST(Transformer, MeanValueCountMustMatchChannels) {
  DataTransformer t(Param("mean_value: 1 mean_value: 2"), TRAIN, "t");
  EXPECT_TRUE(Contains(ErrorOf([&] { t.OutputShape(Ramp(3, 1, 1)); }), "2 mean_value entries"));
}

TEST(Transformer, MissingMeanFile) {
  const std::string message = ErrorOf([] { DataTransformer t(Param("mean_file: '/no/such.binaryproto'"), TRAIN, "t"); });
  EXPECT_TRUE(Contains(message, "/no/such.binaryproto")) << message;
}

TEST(Transformer, EncodedDatumsNeedOpenCV) {
  DataTransformer t(Param(""), TRAIN, "t");
  Datum d = Ramp(1, 1, 2);
  d.set_encoded(true);
  float out[2];
  RecordRng rng(1);
  EXPECT_TRUE(Contains(ErrorOf([&] { t.Transform(d, out, rng); }), "encoded images need OpenCV"));
}

TEST(Transformer, PayloadOfTheWrongSize) {
  DataTransformer t(Param(""), TRAIN, "t");
  Datum d = MakeDatum(1, 2, 2, {1, 2, 3});
  float out[4];
  RecordRng rng(1);
  EXPECT_TRUE(Contains(ErrorOf([&] { t.Transform(d, out, rng); }), "holds 3 values instead of 4"));
}

// C·H·W past int64 (16×2^30×2^30 = 2^64, which wrapped to 0) must not let an empty record through: the
// loop would read 2^64 values of nothing.
TEST(Transformer, ShapeWhoseValueCountOverflowsInt64) {
  DataTransformer t(Param("crop_size: 1"), TEST, "t");
  Datum d;
  d.set_channels(16), d.set_height(1 << 30), d.set_width(1 << 30);
  float out[16];
  RecordRng rng(1);
  EXPECT_EQ(ErrorOf([&] { t.Transform(d, out, rng); }),
            "t: a record of shape 16×1073741824×1073741824 holds 0 values instead of more than 2^63");
  d.add_float_data(1.0f);
  EXPECT_EQ(ErrorOf([&] { t.Transform(d, out, rng); }),
            "t: a record of shape 16×1073741824×1073741824 holds 1 values instead of more than 2^63");
}

// The same for a mean file: an empty 1×16×2^30×2^30 mean is refused, not taken for "no mean".
TEST(Transformer, MeanFileWhoseValueCountOverflowsInt64) {
  const std::string mean_path = TempDir() + "/mean.binaryproto";
  BlobProto mean;
  for (int d : {1, 16, 1 << 30, 1 << 30}) mean.mutable_shape()->add_dim(d);
  WriteProtoToBinaryFile(mean, mean_path);
  EXPECT_EQ(ErrorOf([&] { DataTransformer t(Param("mean_file: '" + mean_path + "'"), TEST, "t"); }),
            "t: mean file '" + mean_path + "' has shape 1×16×1073741824×1073741824 but holds 0 values");
}

// A resize or stretch fixes no output size: crop_size must, and the layer is named at set-up.
TEST(Transformer, ResizeWithoutCropSizeIsASetupError) {
  for (const std::string text : {"img_rand_resize_lower: 240 img_rand_resize_upper: 288",
                                 "vertical_stretch_lower: 0.7 vertical_stretch_upper: 1.3"}) {
    EXPECT_EQ(ErrorOf([&] { DataTransformer t(Param(text), TRAIN, "layer data (Data)"); }),
              "layer data (Data): transform_param's random resize and stretch (img_rand_resize_*, *_stretch_*) "
              "need crop_size, which fixes the size of the output")
        << text;
  }
}

TEST(Transformer, ResizeBoundsAreChecked) {
  EXPECT_EQ(ErrorOf([] { DataTransformer t(Param("img_rand_resize_lower: 9 img_rand_resize_upper: 8 crop_size: 4"),
                                           TRAIN, "t"); }),
            "t: transform_param's img_rand_resize_upper (8) is less than img_rand_resize_lower (9)");
  EXPECT_EQ(ErrorOf([] { DataTransformer t(Param("img_rand_resize_lower: 9 crop_size: 4"), TRAIN, "t"); }),
            "t: transform_param gives img_rand_resize_lower without img_rand_resize_upper");
}

// A build without OpenCV refuses a resize at set-up, naming the layer; with OpenCV it is accepted.
TEST(Transformer, ResizeNeedsOpenCV) {
  const TransformationParameter p = Param("horizontal_stretch_lower: 0.8 horizontal_stretch_upper: 1.2 crop_size: 4");
  if (BuiltWithImageSupport()) {
    DataTransformer t(p, TEST, "layer data (Data)");
    EXPECT_TRUE(t.resizes());
    return;
  }
  EXPECT_EQ(ErrorOf([&] { DataTransformer t(p, TEST, "layer data (Data)"); }),
            "layer data (Data): transform_param's random resize and stretch need OpenCV, and this build of Cortado "
            "has no image support (install libopencv-dev and rebuild)");
}

// Only the fields asking for one turn the resize on: the defaults, and crop alone, leave it off.
TEST(Transformer, NoResizeByDefault) {
  EXPECT_FALSE(DataTransformer(Param(""), TRAIN, "t").resizes());
  EXPECT_FALSE(DataTransformer(Param("crop_size: 2 interpolation_algo_up: INTER_AREA allow_upscale: true"), TRAIN, "t")
                   .resizes());
  if (BuiltWithImageSupport())  // a stretch field given, even {1, 1}, turns it on (NVIDIA's rule)
    EXPECT_TRUE(DataTransformer(Param("vertical_stretch_upper: 1 crop_size: 2"), TRAIN, "t").resizes());
}

}  // namespace cortado::test
