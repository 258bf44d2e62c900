// image_data_test.cpp — images through the pipelined layers, against OpenCV read independently:
// ImageData (list file with spaces in paths, root_folder, BGR planar pixels, wrap-around, resize as
// cv::resize INTER_LINEAR, is_color false, seeded shuffles, errors naming the file and line), and
// the Data layer on encoded Datums (decoded in the workers; force_gray, force_color).
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <random>

#include "cortado/data/lmdb.hpp"
#include "cortado/error.hpp"
#include "cortado/image.hpp"
#include "test_util.hpp"

namespace cortado::test {

namespace {

#define SKIP_WITHOUT_OPENCV() \
  if (!BuiltWithImageSupport()) GTEST_SKIP() << "this build has no OpenCV"

// A colour image whose pixels all differ: B = 10i + 3y + x, G = 100 + y, R = 200 + x (mod 256).
cv::Mat MakeImage(int i, int height, int width) {
  cv::Mat image(height, width, CV_8UC3);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      image.at<cv::Vec3b>(y, x) = cv::Vec3b(static_cast<uint8_t>((10 * i + 3 * y + x) % 256),
                                            static_cast<uint8_t>(100 + y), static_cast<uint8_t>(200 + x));
  return image;
}

// Writes PNGs "img <i>.png" (a space in each name) under dir/pics and a list "pics/img <i>.png <label>";
// returns the list's path. The images are 4×5 unless sizes say otherwise.
std::string WriteImages(const std::string& dir, int count, std::vector<cv::Size> sizes = {}) {
  std::filesystem::create_directories(dir + "/pics");
  std::string list;
  for (int i = 0; i < count; ++i) {
    const cv::Size size = i < static_cast<int>(sizes.size()) ? sizes[i] : cv::Size(5, 4);
    const std::string name = "pics/img " + std::to_string(i) + ".png";
    EXPECT_TRUE(cv::imwrite(dir + "/" + name, MakeImage(i, size.height, size.width)));
    list += name + " " + std::to_string(30 + i) + "\n";
  }
  WriteFile(dir + "/list.txt", list);
  return dir + "/list.txt";
}

std::string ImageDataText(const std::string& list, const std::string& root, int batch, const std::string& extra = "") {
  return "name: 'images' type: 'ImageData' image_data_param { source: '" + list + "' root_folder: '" + root +
         "/' batch_size: " + std::to_string(batch) + " " + extra + " }";
}

// Expects item b of the data top to be `image` (H×W×C, OpenCV's layout) in C×H×W order.
void ExpectImage(LayerFixture& f, int b, const cv::Mat& image) {
  const int channels = image.channels(), height = image.rows, width = image.cols;
  ASSERT_EQ(f.top(0).shape(), (std::vector<int>{f.top(0).shape(0), channels, height, width}));
  const float* item = f.top(0).data() + static_cast<size_t>(b) * channels * height * width;
  for (int c = 0; c < channels; ++c)
    for (int y = 0; y < height; ++y)
      for (int x = 0; x < width; ++x)
        ASSERT_EQ(item[(c * height + y) * width + x], image.ptr<uint8_t>(y)[x * channels + c])
            << "item " << b << " channel " << c << " at (" << y << ", " << x << ")";
}

cv::Mat Read(const std::string& path, int flags = cv::IMREAD_COLOR) { return cv::imread(path, flags); }

}  // namespace

TEST(ImageData, ListOrderPixelsAndLabelsWrappingAtTheEnd) {
  SKIP_WITHOUT_OPENCV();
  const std::string dir = TempDir();
  const std::string list = WriteImages(dir, 3);
  LayerFixture f(ImageDataText(list, dir, 2), {}, 2);
  EXPECT_EQ(f.top(0).shape(), (std::vector<int>{2, 3, 4, 5}));
  const int expected[3][2] = {{0, 1}, {2, 0}, {1, 2}};
  for (const auto& batch : expected) {
    f.Forward();
    for (int b = 0; b < 2; ++b) {
      EXPECT_EQ(f.top(1).data()[b], 30 + batch[b]);
      ExpectImage(f, b, Read(dir + "/pics/img " + std::to_string(batch[b]) + ".png"));
    }
  }
}

TEST(ImageData, ResizesLikeOpenCVsBilinearResize) {
  SKIP_WITHOUT_OPENCV();
  const std::string dir = TempDir();
  const std::string list = WriteImages(dir, 2, {cv::Size(9, 7), cv::Size(4, 6)});  // different sizes
  LayerFixture f(ImageDataText(list, dir, 2, "new_height: 5 new_width: 8"), {}, 2);
  f.Forward();
  for (int i = 0; i < 2; ++i) {
    cv::Mat resized;
    cv::resize(Read(dir + "/pics/img " + std::to_string(i) + ".png"), resized, cv::Size(8, 5), 0, 0, cv::INTER_LINEAR);
    ExpectImage(f, i, resized);
  }
}

TEST(ImageData, IsColorFalseReadsOneChannel) {
  SKIP_WITHOUT_OPENCV();
  const std::string dir = TempDir();
  const std::string list = WriteImages(dir, 2);
  LayerFixture f(ImageDataText(list, dir, 2, "is_color: false"), {}, 2);
  EXPECT_EQ(f.top(0).shape(), (std::vector<int>{2, 1, 4, 5}));
  f.Forward();
  ExpectImage(f, 1, Read(dir + "/pics/img 1.png", cv::IMREAD_GRAYSCALE));
}

TEST(ImageData, ShuffledEpochsArePermutationsRepeatedBySeed) {
  SKIP_WITHOUT_OPENCV();
  const std::string dir = TempDir();
  const std::string list = WriteImages(dir, 6);
  auto epochs = [&](uint32_t seed) {
    LayerFixture f(ImageDataText(list, dir, 6, "shuffle: true"), {}, 2, seed);
    std::vector<std::vector<float>> labels;
    for (int epoch = 0; epoch < 4; ++epoch) {
      f.Forward();
      labels.emplace_back(f.top(1).data(), f.top(1).data() + 6);
      std::vector<float> sorted = labels.back();
      std::sort(sorted.begin(), sorted.end());
      EXPECT_EQ(sorted, (std::vector<float>{30, 31, 32, 33, 34, 35})) << "epoch " << epoch;
    }
    return labels;
  };
  const auto first = epochs(5);
  EXPECT_EQ(epochs(5), first);
  EXPECT_NE(epochs(6), first);
  EXPECT_TRUE(first[0] != first[1] || first[1] != first[2]) << "the order never changes between epochs";
}

TEST(ImageData, MistakesNameTheFileOrLine) {
  SKIP_WITHOUT_OPENCV();
  const std::string dir = TempDir();
  EXPECT_NE(ErrorOf([&] { LayerFixture f(ImageDataText(dir + "/none.txt", dir, 1), {}, 2); }).find("none.txt"),
            std::string::npos);
  WriteFile(dir + "/bad.txt", "pics/a.png 1\nno_label_here\n");
  const std::string bad = ErrorOf([&] { LayerFixture f(ImageDataText(dir + "/bad.txt", dir, 1), {}, 2); });
  EXPECT_NE(bad.find("bad.txt:2"), std::string::npos) << bad;
  WriteFile(dir + "/missing.txt", "pics/absent.png 1\n");
  const std::string missing = ErrorOf([&] { LayerFixture f(ImageDataText(dir + "/missing.txt", dir, 1), {}, 2); });
  EXPECT_NE(missing.find("absent.png"), std::string::npos) << missing;
  // Images of different sizes without new_height/new_width: the odd one is named when it is reached.
  const std::string list = WriteImages(dir, 2, {cv::Size(5, 4), cv::Size(6, 4)});
  LayerFixture f(ImageDataText(list, dir, 1), {}, 2);
  f.Forward();
  const std::string odd = ErrorOf([&] { f.Forward(); });
  EXPECT_NE(odd.find("img 1.png"), std::string::npos) << odd;
  EXPECT_NE(odd.find("new_height"), std::string::npos) << odd;
}

// ---- encoded Datums through the Data layer --------------------------------------------------------

namespace {

// An LMDB of PNG-encoded Datums of the given images, labels 50 + i.
std::string EncodedLmdb(const std::string& path, const std::vector<cv::Mat>& images) {
  LmdbWriter writer(path, "test");
  for (size_t i = 0; i < images.size(); ++i) {
    std::vector<uint8_t> bytes;
    EXPECT_TRUE(cv::imencode(".png", images[i], bytes));
    Datum datum;
    datum.set_encoded(true);
    datum.set_data(bytes.data(), bytes.size());
    datum.set_label(50 + static_cast<int>(i));
    char key[16];
    std::snprintf(key, sizeof(key), "%08zu", i);
    writer.Put(key, datum.SerializeAsString());
  }
  writer.Finish();
  return path;
}

std::string EncodedDataText(const std::string& source, int batch, const std::string& transform = "") {
  return "name: 'data' type: 'Data' data_param { source: '" + source + "' backend: LMDB batch_size: " +
         std::to_string(batch) + " threads: 2 } transform_param { " + transform + " }";
}

}  // namespace

TEST(EncodedData, DecodedInTheWorkersAsStored) {
  SKIP_WITHOUT_OPENCV();
  const std::vector<cv::Mat> images = {MakeImage(0, 4, 5), MakeImage(1, 4, 5), MakeImage(2, 4, 5)};
  const std::string db = EncodedLmdb(TempDir() + "/db", images);
  LayerFixture f(EncodedDataText(db, 3), {}, 2);
  f.Forward();
  for (int b = 0; b < 3; ++b) {
    EXPECT_EQ(f.top(1).data()[b], 50 + b);
    ExpectImage(f, b, images[b]);
  }
}

TEST(EncodedData, ForceGrayAndForceColor) {
  SKIP_WITHOUT_OPENCV();
  const std::string dir = TempDir();
  const cv::Mat colour = MakeImage(3, 4, 5);
  LayerFixture gray(EncodedDataText(EncodedLmdb(dir + "/colour", {colour}), 1, "force_gray: true"), {}, 2);
  gray.Forward();
  std::vector<uint8_t> png;
  cv::imencode(".png", colour, png);
  ExpectImage(gray, 0, cv::imdecode(png, cv::IMREAD_GRAYSCALE));

  cv::Mat grey_image;
  cv::cvtColor(colour, grey_image, cv::COLOR_BGR2GRAY);
  LayerFixture color(EncodedDataText(EncodedLmdb(dir + "/grey", {grey_image}), 1, "force_color: true"), {}, 2);
  color.Forward();
  cv::Mat expanded;
  cv::cvtColor(grey_image, expanded, cv::COLOR_GRAY2BGR);
  ExpectImage(color, 0, expanded);

  const std::string both = ErrorOf([&] {
    LayerFixture f(EncodedDataText(dir + "/colour", 1, "force_gray: true force_color: true"), {}, 2);
  });
  EXPECT_NE(both.find("force_color and force_gray"), std::string::npos) << both;
}

}  // namespace cortado::test
