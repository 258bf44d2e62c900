// transformer.hpp — DataTransformer: Datum (uint8 or float C×H×W) → floats, with mean, scale, crop and
// mirror; ReadMeanImage, the mean file it subtracts; ValueCount, a record's C·H·W, checked.
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
// Random draws, in order: flip (rng() % 2), then row and column offsets (rng() % (H−k+1), ...).
class DataTransformer {
 public:
  // Reads the mean file now. `owner` prefixes error messages.
  DataTransformer(const TransformationParameter& param, Phase phase, std::string owner);

  // Output shape {C, H', W'} for a datum of C×H×W (H' = W' = crop_size when cropping); throws when
  // the crop is larger than the image, the mean file's shape differs or mean_value's count is wrong.
  std::vector<int> OutputShape(const Datum& datum) const;
  // Writes C·H'·W' floats to out. Throws Error for encoded datums and malformed payloads.
  void Transform(const Datum& datum, float* out, RecordRng& rng) const;

 private:
  void CheckShape(int channels, int height, int width) const;

  TransformationParameter param_;
  Phase phase_;
  std::string owner_;
  std::vector<float> mean_;  // C·H·W values from mean_file, else empty
  std::vector<int> mean_shape_;
};

}  // namespace cortado
