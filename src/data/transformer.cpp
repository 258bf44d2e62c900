// transformer.cpp — DataTransformer: one Datum into floats, (x − mean) · scale with NVIDIA Caffe's
// random resize and stretch (through ResizePlanes, image.hpp), crop and mirror, written straight into
// the caller's batch buffer.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>

#include "cortado/data/transformer.hpp"
#include "cortado/error.hpp"
#include "cortado/image.hpp"  // ResizePlanes, BuiltWithImageSupport, kMostDecodedPixels
#include "cortado/io.hpp"

namespace cortado {

namespace {

template <typename Dim = int>  // {c, h, w} braced lists are ints
std::string ShapeText(const std::vector<Dim>& shape) {
  std::ostringstream out;
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? "×" : "") << shape[i];
  return out.str();
}

// NVIDIA Caffe's Rand(lo, hi): uniform in [min, max] of the two from one 32-bit draw; no draw when equal.
float Uniform(float a, float b, RecordRng& rng) {
  if (a == b) return a;
  const double lo = std::min(a, b), hi = std::max(a, b);
  return static_cast<float>(lo + (hi - lo) * static_cast<double>(rng()) / double{UINT32_MAX});
}

}  // namespace

// int64(c)·h < 2^62 is exact for int axes: only the last product can overflow.
int64_t ValueCount(int channels, int height, int width) {
  int64_t count = 0;
  return __builtin_mul_overflow(int64_t(channels) * height, width, &count) ? -1 : count;
}

MeanImage ReadMeanImage(const std::string& path) {
  BlobProto proto;
  ReadProtoFromBinaryFile(path, &proto);
  std::vector<int64_t> dims;
  if (proto.has_shape()) {
    dims.assign(proto.shape().dim().begin(), proto.shape().dim().end());
  } else {
    dims = {proto.num(), proto.channels(), proto.height(), proto.width()};
  }
  MeanImage mean;
  mean.given = ShapeText(dims);
  for (int64_t d : dims)
    CORTADO_REQUIRE(d > 0 && d <= std::numeric_limits<int32_t>::max(), "mean file '", path, "' has shape ",
                    mean.given, "; every axis must be positive (an empty or damaged mean file?)");
  std::vector<int> shape(dims.begin(), dims.end());
  // Normalise to C×H×W: drop leading 1s (1×C×H×W), pad a plain H×W with C = 1.
  while (shape.size() > 3 && shape.front() == 1) shape.erase(shape.begin());
  while (shape.size() < 3) shape.insert(shape.begin(), 1);
  CORTADO_REQUIRE(shape.size() == 3, "mean file '", path, "' has shape ", mean.given, "; expected 1×C×H×W");
  mean.shape = shape;
  const int64_t count = ValueCount(shape[0], shape[1], shape[2]);  // -1, matching nothing, on overflow
  if (proto.data_size() == count) {
    mean.values.assign(proto.data().begin(), proto.data().end());
  } else if (proto.double_data_size() == count) {
    mean.values.assign(proto.double_data().begin(), proto.double_data().end());
  } else {
    Fail("mean file '", path, "' has shape ", mean.given, " but holds ", proto.data_size() + proto.double_data_size(),
         " values");
  }
  return mean;
}

DataTransformer::DataTransformer(const TransformationParameter& param, Phase phase, std::string owner)
    : param_(param), phase_(phase), owner_(std::move(owner)) {
  CORTADO_REQUIRE(!(param_.has_mean_file() && param_.mean_value_size() > 0), owner_,
                  ": transform_param gives both mean_file and mean_value; keep one");
  const uint32_t lower = param_.img_rand_resize_lower(), upper = param_.img_rand_resize_upper();
  resizes_ = lower != 0 || upper != 0 || param_.has_vertical_stretch_lower() || param_.has_vertical_stretch_upper() ||
             param_.has_horizontal_stretch_lower() || param_.has_horizontal_stretch_upper();
  if (resizes_) {
    CORTADO_REQUIRE(param_.crop_size() > 0, owner_, ": transform_param's random resize and stretch ",
                    "(img_rand_resize_*, *_stretch_*) need crop_size, which fixes the size of the output");
    CORTADO_REQUIRE((lower > 0) == (upper > 0), owner_, ": transform_param gives img_rand_resize_",
                    lower > 0 ? "lower" : "upper", " without img_rand_resize_", lower > 0 ? "upper" : "lower");
    CORTADO_REQUIRE(lower <= upper, owner_, ": transform_param's img_rand_resize_upper (", upper,
                    ") is less than img_rand_resize_lower (", lower, ")");
    CORTADO_REQUIRE(BuiltWithImageSupport(), owner_, ": transform_param's random resize and stretch need ",
                    "OpenCV, and this build of Cortado has no image support (install libopencv-dev and rebuild)");
  }
  if (!param_.has_mean_file()) return;
  MeanImage mean;
  try {
    mean = ReadMeanImage(param_.mean_file());
  } catch (const Error& e) {
    Fail(owner_, ": ", e.what());
  }
  mean_shape_ = std::move(mean.shape);
  mean_ = std::move(mean.values);
}

void DataTransformer::CheckShape(int channels, int height, int width) const {
  CORTADO_REQUIRE(channels > 0 && height > 0 && width > 0, owner_, ": a record has shape ",
                  ShapeText({channels, height, width}), " (C×H×W); every axis must be positive");
  const int crop = static_cast<int>(param_.crop_size());
  if (resizes_) {  // the crop is checked after the resize; the mean file gives its centre crop×crop
    CORTADO_REQUIRE(mean_.empty() || (mean_shape_[0] == channels && mean_shape_[1] >= crop && mean_shape_[2] >= crop),
                    owner_, ": mean file '", param_.mean_file(), "' has shape ", ShapeText(mean_shape_),
                    "; with a resize, its centre ", crop, "×", crop, " window is subtracted from images of ",
                    channels, " channels");
  } else {
    CORTADO_REQUIRE(crop <= height && crop <= width, owner_, ": crop_size ", crop,
                    " is larger than the images (", height, "×", width, ")");
  }
  if (!mean_.empty() && !resizes_) {
    CORTADO_REQUIRE(mean_shape_ == std::vector<int>({channels, height, width}), owner_,
                    ": mean file '", param_.mean_file(), "' has shape ", ShapeText(mean_shape_),
                    " but the images are ", ShapeText({channels, height, width}), " (C×H×W)");
  }
  const int n = param_.mean_value_size();
  CORTADO_REQUIRE(n <= 1 || n == channels, owner_, ": transform_param has ", n,
                  " mean_value entries; give 1 or one per channel (", channels, ")");
}

std::vector<int> DataTransformer::ResizedSize(int height, int width, RecordRng& rng) const {
  const uint32_t lower = param_.img_rand_resize_lower(), upper = param_.img_rand_resize_upper();
  const int shorter = std::min(height, width);
  const uint64_t size = lower > 0 && upper > 0 ? lower + rng() % (uint64_t{upper} - lower + 1) : shorter;
  const float scale = static_cast<float>(size) / static_cast<float>(shorter);
  float h = scale * static_cast<float>(height), w = scale * static_cast<float>(width);
  const float v_lo = param_.vertical_stretch_lower(), v_hi = param_.vertical_stretch_upper();
  if (v_lo > 0 && v_hi > 0) h *= Uniform(v_lo, v_hi, rng);
  const float h_lo = param_.horizontal_stretch_lower(), h_hi = param_.horizontal_stretch_upper();
  if (h_lo > 0 && h_hi > 0) w *= Uniform(h_lo, h_hi, rng);
  // Rounded as std::lround does, kept below 2^30 so that the int holds it (Transform refuses such sizes).
  const auto side = [&](float v, int original) {
    const int rounded = static_cast<int>(std::lround(std::min(v, float(1 << 30))));
    const int at_least_crop = std::max(static_cast<int>(param_.crop_size()), rounded);
    return param_.allow_upscale() ? at_least_crop : std::min(at_least_crop, original);
  };
  return {side(h, height), side(w, width)};
}

std::vector<int> DataTransformer::OutputShape(const Datum& datum) const {
  CheckShape(datum.channels(), datum.height(), datum.width());
  const int crop = static_cast<int>(param_.crop_size());
  return {datum.channels(), crop > 0 ? crop : datum.height(), crop > 0 ? crop : datum.width()};
}

void DataTransformer::Transform(const Datum& datum, float* out, RecordRng& rng) const {
  CORTADO_REQUIRE(!datum.encoded(), owner_,
                  ": encoded images need OpenCV (store raw pixels: convert_imageset without --encoded)");
  const int channels = datum.channels();
  CheckShape(channels, datum.height(), datum.width());
  const int64_t count = ValueCount(channels, datum.height(), datum.width());  // -1, matching nothing, on overflow
  const std::string& bytes = datum.data();
  const bool from_bytes = !bytes.empty();
  CORTADO_REQUIRE(from_bytes ? int64_t(bytes.size()) == count : datum.float_data_size() == count,
                  owner_, ": a record of shape ", ShapeText({channels, datum.height(), datum.width()}), " holds ",
                  from_bytes ? bytes.size() : datum.float_data_size(), " values instead of ",
                  count < 0 ? std::string("more than 2^63") : std::to_string(count));

  const auto* pixels = reinterpret_cast<const uint8_t*>(bytes.data());
  const float* floats = datum.float_data().data();
  const int crop = static_cast<int>(param_.crop_size());
  int height = datum.height(), width = datum.width();
  if (resizes_) {
    const std::vector<int> size = ResizedSize(height, width, rng);
    if (size[0] != height || size[1] != width) {
      CORTADO_REQUIRE(uint64_t(size[0]) * uint64_t(size[1]) <= kMostDecodedPixels, owner_, ": a record of ", height,
                      "×", width, " would be resized to ", size[0], "×", size[1], ", more than the ",
                      kMostDecodedPixels, " pixels Cortado makes of an image (check the resize's bounds)");
      const int interpolation = size[0] <= height && size[1] <= width ? param_.interpolation_algo_down()
                                                                      : param_.interpolation_algo_up();
      thread_local std::vector<uint8_t> resized_bytes;  // each worker's, reused record after record
      thread_local std::vector<float> resized_floats;
      if (from_bytes) {
        ResizePlanes(pixels, channels, height, width, size[0], size[1], interpolation, &resized_bytes);
        pixels = resized_bytes.data();
      } else {
        ResizePlanes(floats, channels, height, width, size[0], size[1], interpolation, &resized_floats);
        floats = resized_floats.data();
      }
    }
    CORTADO_REQUIRE(crop <= size[0] && crop <= size[1], owner_, ": a record of ", height, "×", width, " is ",
                    size[0], "×", size[1], " after its resize, smaller than crop_size ", crop,
                    param_.allow_upscale() ? "" : " (without allow_upscale no image grows)");
    height = size[0], width = size[1];
  }

  const bool train = phase_ == TRAIN;
  const bool flip = param_.mirror() && train && rng() % 2;
  int out_h = height, out_w = width, h_off = 0, w_off = 0;
  if (crop > 0) {
    out_h = out_w = crop;
    if (train) {
      h_off = static_cast<int>(rng() % (height - crop + 1));
      w_off = static_cast<int>(rng() % (width - crop + 1));
    } else {
      h_off = (height - crop) / 2;
      w_off = (width - crop) / 2;
    }
  }

  // The mean file's window: the image's own without a resize (the two have one shape), else its centre.
  const int mean_h = mean_.empty() ? 0 : mean_shape_[1], mean_w = mean_.empty() ? 0 : mean_shape_[2];
  const int mean_h_off = resizes_ ? (mean_h - crop) / 2 : h_off, mean_w_off = resizes_ ? (mean_w - crop) / 2 : w_off;
  const float scale = param_.scale();
  const int num_means = param_.mean_value_size();
  for (int c = 0; c < channels; ++c) {
    const float channel_mean = num_means == 0 ? 0.0f : param_.mean_value(num_means == 1 ? 0 : c);
    for (int h = 0; h < out_h; ++h) {
      const int64_t src = (int64_t(c) * height + h_off + h) * width + w_off;
      float* dst = out + (int64_t(c) * out_h + h) * out_w;
      const float* mean =
          mean_.empty() ? nullptr : mean_.data() + (int64_t(c) * mean_h + mean_h_off + h) * mean_w + mean_w_off;
      for (int w = 0; w < out_w; ++w) {
        const float x = from_bytes ? static_cast<float>(pixels[src + w]) : floats[src + w];
        dst[flip ? out_w - 1 - w : w] = (x - (mean ? mean[w] : channel_mean)) * scale;
      }
    }
  }
}

}  // namespace cortado
