// resize.cpp — ResizePlanes with OpenCV (imgproc): each plane of a planar C×H×W image wrapped in a
// cv::Mat without a copy and resized by cv::resize straight into the output's plane.
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include <glog/logging.h>

#include "cortado/image.hpp"

namespace cortado {

static_assert(int{cv::INTER_NEAREST} == TransformationParameter::INTER_NEAREST &&
                  int{cv::INTER_LINEAR} == TransformationParameter::INTER_LINEAR &&
                  int{cv::INTER_CUBIC} == TransformationParameter::INTER_CUBIC &&
                  int{cv::INTER_AREA} == TransformationParameter::INTER_AREA,
              "the proto's InterpolationAlgo numbers are OpenCV's");

namespace {

template <typename T>
void Resize(const T* in, int channels, int height, int width, int new_height, int new_width, int interpolation,
            std::vector<T>* out) {
  CHECK(channels > 0 && height > 0 && width > 0 && new_height > 0 && new_width > 0) << "the callers check sizes";
  const int type = cv::DataType<T>::type;  // CV_8UC1 or CV_32FC1
  const size_t plane = size_t(height) * width, new_plane = size_t(new_height) * new_width;
  out->resize(channels * new_plane);
  for (int c = 0; c < channels; ++c) {
    const cv::Mat src(height, width, type, const_cast<T*>(in + c * plane));
    cv::Mat dst(new_height, new_width, type, out->data() + c * new_plane);
    cv::resize(src, dst, dst.size(), 0, 0, interpolation);  // dst keeps its memory: same size and type
    CHECK(dst.data == reinterpret_cast<uchar*>(out->data() + c * new_plane)) << "cv::resize reallocated";
  }
}

}  // namespace

void ResizePlanes(const uint8_t* in, int channels, int height, int width, int new_height, int new_width,
                  int interpolation, std::vector<uint8_t>* out) {
  Resize(in, channels, height, width, new_height, new_width, interpolation, out);
}

void ResizePlanes(const float* in, int channels, int height, int width, int new_height, int new_width,
                  int interpolation, std::vector<float>* out) {
  Resize(in, channels, height, width, new_height, new_width, interpolation, out);
}

}  // namespace cortado
