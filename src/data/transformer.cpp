// transformer.cpp — DataTransformer: one Datum into floats, (x − mean) · scale with crop and mirror,
// written straight into the caller's batch buffer.
#include <cstdint>
#include <limits>
#include <sstream>

#include "cortado/data/transformer.hpp"
#include "cortado/error.hpp"
#include "cortado/io.hpp"

namespace cortado {

namespace {

template <typename Dim = int>  // {c, h, w} braced lists are ints
std::string ShapeText(const std::vector<Dim>& shape) {
  std::ostringstream out;
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? "×" : "") << shape[i];
  return out.str();
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
  CORTADO_REQUIRE(crop <= height && crop <= width, owner_, ": crop_size ", crop,
                  " is larger than the images (", height, "×", width, ")");
  if (!mean_.empty()) {
    CORTADO_REQUIRE(mean_shape_ == std::vector<int>({channels, height, width}), owner_,
                    ": mean file '", param_.mean_file(), "' has shape ", ShapeText(mean_shape_),
                    " but the images are ", ShapeText({channels, height, width}), " (C×H×W)");
  }
  const int n = param_.mean_value_size();
  CORTADO_REQUIRE(n <= 1 || n == channels, owner_, ": transform_param has ", n,
                  " mean_value entries; give 1 or one per channel (", channels, ")");
}

std::vector<int> DataTransformer::OutputShape(const Datum& datum) const {
  CheckShape(datum.channels(), datum.height(), datum.width());
  const int crop = static_cast<int>(param_.crop_size());
  return {datum.channels(), crop > 0 ? crop : datum.height(), crop > 0 ? crop : datum.width()};
}

void DataTransformer::Transform(const Datum& datum, float* out, RecordRng& rng) const {
  CORTADO_REQUIRE(!datum.encoded(), owner_,
                  ": encoded images need OpenCV (store raw pixels: convert_imageset without --encoded)");
  const int channels = datum.channels(), height = datum.height(), width = datum.width();
  CheckShape(channels, height, width);
  const int64_t count = ValueCount(channels, height, width);  // -1, matching nothing, on overflow
  const std::string& bytes = datum.data();
  const bool from_bytes = !bytes.empty();
  CORTADO_REQUIRE(from_bytes ? int64_t(bytes.size()) == count : datum.float_data_size() == count,
                  owner_, ": a record of shape ", ShapeText({channels, height, width}), " holds ",
                  from_bytes ? bytes.size() : datum.float_data_size(), " values instead of ",
                  count < 0 ? std::string("more than 2^63") : std::to_string(count));

  const bool train = phase_ == TRAIN;
  const bool flip = param_.mirror() && train && rng() % 2;
  const int crop = static_cast<int>(param_.crop_size());
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

  const float scale = param_.scale();
  const auto* pixels = reinterpret_cast<const uint8_t*>(bytes.data());
  const float* floats = datum.float_data().data();
  const int num_means = param_.mean_value_size();
  for (int c = 0; c < channels; ++c) {
    const float channel_mean = num_means == 0 ? 0.0f : param_.mean_value(num_means == 1 ? 0 : c);
    for (int h = 0; h < out_h; ++h) {
      const int64_t src = (int64_t(c) * height + h_off + h) * width + w_off;
      float* dst = out + (int64_t(c) * out_h + h) * out_w;
      const float* mean = mean_.empty() ? nullptr : mean_.data() + src;
      for (int w = 0; w < out_w; ++w) {
        const float x = from_bytes ? static_cast<float>(pixels[src + w]) : floats[src + w];
        dst[flip ? out_w - 1 - w : w] = (x - (mean ? mean[w] : channel_mean)) * scale;
      }
    }
  }
}

}  // namespace cortado
