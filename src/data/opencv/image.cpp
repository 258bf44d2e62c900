// image.cpp — image decoding and reading with OpenCV (imgcodecs, imgproc): encoded Datums for the
// data layers' workers, image files for ImageData and convert_imageset.
#include "cortado/image.hpp"

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <string>
#include <vector>

#include "cortado/error.hpp"

namespace cortado {

namespace {

int ImreadFlag(ColorMode mode) {
  switch (mode) {
    case ColorMode::kColor: return cv::IMREAD_COLOR;
    case ColorMode::kGray: return cv::IMREAD_GRAYSCALE;
    case ColorMode::kKeep: break;
  }
  return cv::IMREAD_ANYCOLOR;  // 1 or 3 channels as stored (an alpha channel is dropped)
}

// Interleaved H×W×C uint8 (OpenCV's layout) → Datum's planar C×H×W bytes, one plane per channel
// through cv::split (vectorised), straight into the Datum's storage.
void StorePixels(const cv::Mat& image, Datum* datum) {
  const int channels = image.channels(), height = image.rows, width = image.cols;
  datum->set_channels(channels);
  datum->set_height(height);
  datum->set_width(width);
  datum->set_encoded(false);
  datum->clear_float_data();
  std::string* data = datum->mutable_data();
  data->resize(static_cast<size_t>(channels) * height * width);
  std::vector<cv::Mat> planes;
  planes.reserve(channels);
  for (int c = 0; c < channels; ++c)
    planes.emplace_back(height, width, CV_8UC1, data->data() + static_cast<size_t>(c) * height * width);
  if (channels == 1) {
    image.copyTo(planes[0]);
  } else {
    cv::split(image, planes);
  }
}

std::string NotAnImage(size_t bytes) {
  return "the encoded image (" + std::to_string(bytes) + " bytes) is not a JPEG, PNG, BMP, PNM, TIFF or WebP image "
         "OpenCV can decode (damaged or of another format)";
}

}  // namespace

bool BuiltWithImageSupport() { return true; }

void DecodeDatum(const Datum& encoded, ColorMode mode, Datum* decoded) {
  const std::string& bytes = encoded.data();
  CORTADO_REQUIRE(!bytes.empty(), "the record is marked encoded but holds no image bytes");
  EncodedImageHeader header;
  CORTADO_REQUIRE(ReadEncodedImageHeader(bytes, &header), NotAnImage(bytes.size()));
  CORTADO_REQUIRE(uint64_t{header.width} * header.height <= kMostDecodedPixels, "the encoded ", header.format,
                  " image claims ", header.width, "×", header.height, " pixels, more than the ", kMostDecodedPixels,
                  " Cortado decodes (a damaged header?)");
  const cv::Mat buffer(1, static_cast<int>(bytes.size()), CV_8UC1, const_cast<char*>(bytes.data()));
  cv::Mat image;
  std::string reason;
  try {
    image = cv::imdecode(buffer, ImreadFlag(mode));
  } catch (const cv::Exception& e) {  // some damaged images make OpenCV's decoders throw
    reason = ": " + e.err;
  }
  CORTADO_REQUIRE(!image.empty() && image.depth() == CV_8U, NotAnImage(bytes.size()), reason);
  StorePixels(image, decoded);
  decoded->set_label(encoded.label());
}

void ReadImageToDatum(const std::string& path, int label, int height, int width, ColorMode mode,
                      const std::string& encoding, Datum* datum) {
  cv::Mat image = cv::imread(path, ImreadFlag(mode));
  CORTADO_REQUIRE(!image.empty(), "cannot read image '", path, "' (missing, unreadable or not an image)");
  if (image.depth() != CV_8U) image.convertTo(image, CV_8U);
  if (height > 0 && width > 0 && (image.rows != height || image.cols != width)) {
    cv::Mat resized;
    cv::resize(image, resized, cv::Size(width, height), 0, 0, cv::INTER_LINEAR);
    image = resized;
  }
  datum->set_label(label);
  if (encoding.empty()) {
    StorePixels(image, datum);
    return;
  }
  std::vector<uint8_t> bytes;
  CORTADO_REQUIRE(cv::imencode("." + encoding, image, bytes), "cannot encode '", path, "' as ", encoding);
  datum->clear_float_data();
  datum->set_data(bytes.data(), bytes.size());
  datum->set_encoded(true);
  datum->set_channels(image.channels());
  datum->set_height(image.rows);
  datum->set_width(image.cols);
}

}  // namespace cortado
