// image.cpp — image decoding and reading with OpenCV (imgcodecs, imgproc): encoded Datums for the
// data layers' workers, image files for ImageData, convert_imageset, classify and (ReadImageFile)
// WindowData. Both decode through DecodeImage, which checks the header before OpenCV sees the bytes.
#include "cortado/image.hpp"

#include <glog/logging.h>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "cortado/error.hpp"
#include "image_file.hpp"

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

// Decodes an encoded image (a JPEG, PNG, BMP, PNM, TIFF or WebP file's bytes) with cv::imdecode, 8-bit
// as cv::imread would decode the file, once its header (ReadEncodedImageHeader) shows such a format
// claiming at most MostDecodedPixels(its size) pixels: the one way Cortado decodes an image, a record's
// (DecodeDatum) or a file's (ReadImageFile). `path` names the file in the one-line errors; empty for a
// record's bytes.
cv::Mat DecodeImage(std::string_view bytes, ColorMode mode, const std::string& path) {
  CHECK_LE(bytes.size(), size_t{std::numeric_limits<int>::max()}) << "the callers bound an image's bytes";
  // "the encoded JPEG image claims ..." (a record), "cannot read image 'a.jpg': the JPEG image claims ..."
  const std::string lead = path.empty() ? "the encoded " : "cannot read image '" + path + "': the ";
  const auto not_an_image = [&] {
    return lead + "image (" + std::to_string(bytes.size()) + " bytes) is not a JPEG, PNG, BMP, PNM, TIFF or WebP " +
           "image OpenCV can decode (damaged or of another format)";
  };
  EncodedImageHeader header;
  CORTADO_REQUIRE(ReadEncodedImageHeader(bytes, &header), not_an_image());
  const uint64_t most_pixels = MostDecodedPixels(bytes.size());
  CORTADO_REQUIRE(uint64_t{header.width} * header.height <= most_pixels, lead, header.format, " image claims ",
                  header.width, "×", header.height, " pixels, more than the ", most_pixels,
                  " Cortado decodes (a damaged header?)");
  const cv::Mat buffer(1, static_cast<int>(bytes.size()), CV_8UC1, const_cast<char*>(bytes.data()));
  cv::Mat image;
  std::string reason;
  try {
    image = cv::imdecode(buffer, ImreadFlag(mode));
  } catch (const cv::Exception& e) {  // some damaged images make OpenCV's decoders throw
    reason = ": " + e.err;
  }
  CORTADO_REQUIRE(!image.empty() && image.depth() == CV_8U, not_an_image(), reason);
  return image;
}

}  // namespace

bool BuiltWithImageSupport() { return true; }

void DecodeDatum(const Datum& encoded, ColorMode mode, Datum* decoded) {
  CORTADO_REQUIRE(!encoded.data().empty(), "the record is marked encoded but holds no image bytes");
  StorePixels(DecodeImage(encoded.data(), mode, ""), decoded);
  decoded->set_label(encoded.label());
}

cv::Mat ReadImageFile(const std::string& path, ColorMode mode) {
  const auto unreadable = [&] { return "cannot read image '" + path + "' (missing, unreadable or not an image)"; };
  std::error_code error;
  std::ifstream in;  // a regular file only: a directory's or a device's "size" is no byte count
  if (std::filesystem::is_regular_file(path, error)) in.open(path, std::ios::binary | std::ios::ate);
  CORTADO_REQUIRE(in.is_open(), unreadable());
  const std::streamoff size = in.tellg();
  CORTADO_REQUIRE(size >= 0, unreadable());
  CORTADO_REQUIRE(size <= std::numeric_limits<int>::max(), "cannot read image '", path, "': its ", size,
                  " bytes are more than the ", std::numeric_limits<int>::max(), " Cortado reads of an image file");
  std::string bytes(static_cast<size_t>(size), '\0');
  in.seekg(0);
  in.read(bytes.data(), size);
  CORTADO_REQUIRE(in.gcount() == size, unreadable());
  return DecodeImage(bytes, mode, path);
}

void ReadImageToDatum(const std::string& path, int label, int height, int width, ColorMode mode,
                      const std::string& encoding, Datum* datum) {
  cv::Mat image = ReadImageFile(path, mode);
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
