// filler.cpp — Caffe's fillers. Xavier and MSRA scale by fan_in, fan_out or their average.
#include "cortado/filler.hpp"

#include <cmath>
#include <vector>

#include "cortado/error.hpp"

namespace cortado {

namespace {

float FanScaleN(const FillerParameter& filler, const Blob& blob) {
  const float fan_in = blob.num_axes() > 0 ? static_cast<float>(blob.count()) / blob.shape(0) : 1.0f;
  const float fan_out = blob.num_axes() > 1 ? static_cast<float>(blob.count()) / blob.shape(1) : 1.0f;
  switch (filler.variance_norm()) {
    case FillerParameter::FAN_OUT: return fan_out;
    case FillerParameter::AVERAGE: return (fan_in + fan_out) / 2.0f;
    default: return fan_in;
  }
}

void FillUniform(float* data, int64_t n, float lo, float hi, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(lo, hi);
  for (int64_t i = 0; i < n; ++i) data[i] = dist(rng);
}

void FillGaussian(float* data, int64_t n, float mean, float std, std::mt19937& rng) {
  std::normal_distribution<float> dist(mean, std);
  for (int64_t i = 0; i < n; ++i) data[i] = dist(rng);
}

}  // namespace

void FillBlob(const FillerParameter& filler, Blob* blob, std::mt19937& rng) {
  if (blob->device() == Device::kGPU) {  // filled on the host, then copied (set-up only)
    std::vector<float> values(static_cast<size_t>(blob->count()));
    Blob staging(blob->shape());
    staging.Bind(Device::kCPU, values.data(), nullptr, blob->count());
    FillBlob(filler, &staging, rng);
    blob->WriteData(values);
    return;
  }
  float* data = blob->data();
  const int64_t n = blob->count();
  const std::string& type = filler.type();
  if (type == "constant") {
    for (int64_t i = 0; i < n; ++i) data[i] = filler.value();
  } else if (type == "uniform") {
    FillUniform(data, n, filler.min(), filler.max(), rng);
  } else if (type == "gaussian") {
    FillGaussian(data, n, filler.mean(), filler.std(), rng);
    const int sparse = filler.sparse();
    if (sparse >= 0) {
      // Each output keeps on average `sparse` non-zero inputs: zero the rest at random.
      CORTADO_REQUIRE(blob->num_axes() >= 1, "sparse gaussian filler needs a blob with an output axis");
      const int num_outputs = blob->shape(0);
      const float keep = static_cast<float>(sparse) / static_cast<float>(num_outputs);
      std::bernoulli_distribution coin(keep);
      for (int64_t i = 0; i < n; ++i)
        if (!coin(rng)) data[i] = 0.0f;
    }
  } else if (type == "xavier") {
    const float scale = std::sqrt(3.0f / FanScaleN(filler, *blob));
    FillUniform(data, n, -scale, scale, rng);
  } else if (type == "msra") {
    FillGaussian(data, n, 0.0f, std::sqrt(2.0f / FanScaleN(filler, *blob)), rng);
  } else if (type == "positive_unitball") {
    // Uniform in [0, 1), then each output's inputs scaled to sum to one.
    FillUniform(data, n, 0.0f, 1.0f, rng);
    const int64_t dim = n / blob->shape(0);
    for (int row = 0; row < blob->shape(0); ++row) {
      double sum = 0;
      for (int64_t j = 0; j < dim; ++j) sum += data[row * dim + j];
      for (int64_t j = 0; j < dim; ++j) data[row * dim + j] = static_cast<float>(data[row * dim + j] / sum);
    }
  } else if (type == "bilinear") {
    // Upsampling kernel for a deconvolution: weights of bilinear interpolation, square kernels.
    CORTADO_REQUIRE(blob->num_axes() == 4 && blob->shape(2) == blob->shape(3),
                    "bilinear filler needs a 4-D blob with square kernels, got ", blob->shape_string());
    const int k = blob->shape(3);
    const float f = std::ceil(k / 2.0f);
    const float c = (k - 1) / (2.0f * f);
    for (int64_t i = 0; i < n; ++i) {
      const float x = static_cast<float>(i % k);
      const float y = static_cast<float>((i / k) % k);
      data[i] = (1 - std::fabs(x / f - c)) * (1 - std::fabs(y / f - c));
    }
  } else {
    Fail("unknown filler type '", type,
         "' (known: constant, uniform, gaussian, xavier, msra, positive_unitball, bilinear)");
  }
}

}  // namespace cortado
