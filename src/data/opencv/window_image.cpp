// window_image.cpp — the WindowData layer's image reading and window warp (window_file.hpp) with OpenCV:
// ReadImageFile (image.cpp: the header checked, then cv::imdecode as cv::imread) into an interleaved
// 8-bit buffer, cv::resize (INTER_LINEAR) of a region of it, as Caffe's WindowData reads and warps its
// windows.
#include <glog/logging.h>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "cortado/window_file.hpp"
#include "image_file.hpp"

namespace cortado {

namespace {

cv::Mat View(const Image8& image) {
  return cv::Mat(image.height, image.width, CV_8UC(image.channels), const_cast<uint8_t*>(image.pixels.data()));
}

}  // namespace

void ReadImage8(const std::string& path, ColorMode mode, Image8* image) {
  CHECK(mode != ColorMode::kKeep) << "ReadImage8 reads colour or grey";
  const cv::Mat decoded = ReadImageFile(path, mode);  // IMREAD_COLOR or IMREAD_GRAYSCALE, 8-bit
  image->channels = decoded.channels();
  image->height = decoded.rows;
  image->width = decoded.cols;
  image->pixels.resize(decoded.total() * decoded.elemSize());
  decoded.copyTo(View(*image));  // the view's buffer is the right size: copyTo writes in place
}

void ResizeRegion(const Image8& image, int x, int y, int width, int height, int out_width, int out_height,
                  Image8* out) {
  out->channels = image.channels;
  out->height = out_height;
  out->width = out_width;
  out->pixels.resize(static_cast<size_t>(out_height) * out_width * image.channels);
  cv::Mat target = View(*out);
  cv::resize(View(image)(cv::Rect(x, y, width, height)), target, cv::Size(out_width, out_height), 0, 0,
             cv::INTER_LINEAR);
  CHECK(target.data == out->pixels.data()) << "cv::resize reallocated its target";
}

}  // namespace cortado
