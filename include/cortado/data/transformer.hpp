// transformer.hpp — DataTransformer: Datum (uint8 or float C×H×W) → floats, with NVIDIA Caffe's random
// resize and stretch, mean, scale, crop and mirror; ReadMeanImage, the mean file it subtracts;
// ValueCount, a record's C·H·W, checked.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cortado/batch_pipeline.hpp"  // RecordRng
#include "cortado/cortado.pb.h"

namespace cortado {

// A mean image as Caffe's tools write it (compute_image_mean; a BlobProto of shape 1×C×H×W, from the
// `shape` field or the legacy num/channels/height/width, values in `data` or `double_data`), read as
// C×H×W floats. `given` is the shape as the file writes it ("1×3×32×32"), for messages. A missing or
// unreadable file, an axis that is not positive, a shape that is not (1×)C×H×W (a plain H×W is C = 1),
// and a value count other than the shape's are each an Error naming the file.
struct MeanImage {
  std::vector<int> shape;  // C, H, W
  std::vector<float> values;
  std::string given;
};
MeanImage ReadMeanImage(const std::string& path);

// C·H·W of a record's (or mean image's) positive axes, or -1 when it does not fit in int64: a damaged
// header, since no record holds that many values (-1 equals no value count).
int64_t ValueCount(int channels, int height, int width);


// Per output element: y = (x − mean) · scale, where x is the datum's pixel (uint8 `data`, or
// `float_data` when `data` is empty) and mean is mean_file's value at the same pixel (a BlobProto of
// shape 1×C×H×W, the datum's full size) or mean_value[c] (one value, or one per channel); the two are
// exclusive. crop_size k > 0 takes a k×k window: uniformly random offsets in TRAIN, the centre
// ((H−k)/2, (W−k)/2) in TEST. mirror flips the window horizontally with probability ½ in TRAIN only.
//
// Resize (NVIDIA Caffe's, in TRAIN and TEST alike, before the crop; on when img_rand_resize_lower or
// _upper is non-zero or any *_stretch_* field is given; needs crop_size and OpenCV): the image is
// resized with cv::resize to ResizedSize's H″×W″, with interpolation_algo_down when neither side grows,
// else interpolation_algo_up. The crop then takes its k×k window of the resized image; a mean_file
// (any size of at least k×k) contributes its centre k×k window, as NVIDIA's does.
//
// Random draws, in order: the resize's (see ResizedSize), flip (rng() % 2), then row and column
// offsets (rng() % (H−k+1), ...).
class DataTransformer {
 public:
  // Reads the mean file now. `owner` prefixes error messages. Throws when a resize is asked for
  // without crop_size, with img_rand_resize_upper < _lower or only one of them, or without OpenCV.
  DataTransformer(const TransformationParameter& param, Phase phase, std::string owner);

  // Output shape {C, H', W'} for a datum of C×H×W (H' = W' = crop_size when cropping); throws when
  // the crop is larger than the image (without resize), the mean file's shape differs or mean_value's
  // count is wrong.
  std::vector<int> OutputShape(const Datum& datum) const;
  // Writes C·H'·W' floats to out. Throws Error for encoded datums, malformed payloads and an image
  // smaller than the crop after its resize.
  void Transform(const Datum& datum, float* out, RecordRng& rng) const;

  // True when images are resized (then records may differ in height and width: the crop fixes the
  // output's).
  bool resizes() const { return resizes_; }
  // The size {H″, W″} an H×W image is resized to, drawing from rng as NVIDIA Caffe does:
  //   R = the shorter side, or with img_rand_resize_lower and _upper set, lower + rng() % (upper−lower+1);
  //   s = R / shorter side (float); h = s·H, w = s·W;
  //   h ·= V with vertical_stretch in [lower, upper] when both are > 0, then w ·= U likewise with the
  //   horizontal bounds, each drawn as lo + (hi−lo)·rng() / (2^32−1) (no draw when lo == hi);
  //   H″ = max(crop_size, round(h)), W″ = max(crop_size, round(w)); without allow_upscale each is at
  //   most H, resp. W.
  std::vector<int> ResizedSize(int height, int width, RecordRng& rng) const;

 private:
  void CheckShape(int channels, int height, int width) const;

  TransformationParameter param_;
  Phase phase_;
  std::string owner_;
  bool resizes_ = false;
  std::vector<float> mean_;  // C·H·W values from mean_file, else empty
  std::vector<int> mean_shape_;
};

}  // namespace cortado
