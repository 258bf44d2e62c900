// binaryproto_mean_fuzzer.cpp — a mean file (.binaryproto: a BlobProto, 1×C×H×W in the shape or the
// legacy num/channels/height/width fields), read as a data layer's transform_param mean_file is read,
// then subtracted from a record of the mean's own shape (when it is small) as the workers do.
#include <vector>

#include "cortado/data/transformer.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = cortado::fuzz::WriteInput("mean.binaryproto", data, size);
  return cortado::fuzz::Run([&] {
    cortado::TransformationParameter param;
    param.set_mean_file(path);
    const cortado::DataTransformer transformer(param, cortado::TRAIN, "layer data (Data)");
    cortado::BlobProto mean;
    mean.ParseFromArray(data, static_cast<int>(size));
    // A record of the shape the mean file claims (C×H×W from its last three axes, or legacy fields).
    std::vector<int64_t> dims(mean.shape().dim().begin(), mean.shape().dim().end());
    if (!mean.has_shape()) dims = {mean.channels(), mean.height(), mean.width()};
    while (dims.size() < 3) dims.insert(dims.begin(), 1);
    const int64_t c = dims[dims.size() - 3], h = dims[dims.size() - 2], w = dims[dims.size() - 1];
    if (c <= 0 || h <= 0 || w <= 0 || c * h * w > (1 << 20)) return;
    cortado::Datum datum;
    datum.set_channels(static_cast<int>(c));
    datum.set_height(static_cast<int>(h));
    datum.set_width(static_cast<int>(w));
    datum.set_data(std::string(static_cast<size_t>(c * h * w), '\x40'));
    std::vector<float> out(static_cast<size_t>(c * h * w));
    cortado::RecordRng rng(1);
    transformer.OutputShape(datum);
    transformer.Transform(datum, out.data(), rng);
  });
}
