// compute_image_mean.cpp — the per-pixel mean of every Datum in an LMDB or a LevelDB (--backend; uint8
// data, float_data, or encoded images, decoded as stored), as Caffe's tool: a BlobProto of shape
// 1×C×H×W in the legacy num/channels/height/width fields, written atomically when a path is given, and
// the per-channel means logged. Sums are kept in double, so that large databases lose no precision.
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <cstdint>
#include <string>
#include <vector>

#include "cortado/cortado.pb.h"
#include "cortado/data/records.hpp"
#include "cortado/data/transformer.hpp"
#include "cortado/error.hpp"
#include "cortado/image.hpp"
#include "cortado/io.hpp"
#include "cortado/tool.hpp"

DEFINE_string(backend, "lmdb", "The database format to read: lmdb or leveldb");

namespace {

using cortado::Datum;
using cortado::Fail;

std::string ShapeText(int channels, int height, int width) {
  return std::to_string(channels) + "×" + std::to_string(height) + "×" + std::to_string(width);
}

int Compute(const std::string& db_path, const std::string& mean_path) {
  // A missing or empty database is an Error.
  const auto records = cortado::OpenRecords(cortado::ParseBackendFlag(FLAGS_backend), db_path, "");
  const uint64_t count = records->size();
  Datum datum, decoded;
  int channels = 0, height = 0, width = 0;
  size_t size = 0;  // C·H·W of the first record, which every record shares
  std::vector<double> sum;
  LOG(INFO) << "Starting iteration";
  for (uint64_t n = 0; n < count; ++n) {
    const std::string key(records->key(n));
    const std::string_view value = records->value(n);
    CORTADO_REQUIRE(datum.ParseFromArray(value.data(), static_cast<int>(value.size())), "record '", key,
                    "' of '", db_path, "' is not a Datum");
    const Datum* d = &datum;
    if (datum.encoded()) {
      try {
        cortado::DecodeDatum(datum, cortado::ColorMode::kKeep, &decoded);
      } catch (const cortado::Error& e) {
        Fail("record '", key, "' of '", db_path, "': ", e.what());
      }
      d = &decoded;
    }
    if (n == 0) {
      // The first record's shape sizes the sums: every axis positive and C·H·W in int64, and its values
      // checked below before the sums are allocated.
      channels = d->channels(), height = d->height(), width = d->width();
      CORTADO_REQUIRE(channels > 0 && height > 0 && width > 0, "record '", key, "' of '", db_path, "' has shape ",
                      ShapeText(channels, height, width), " (C×H×W); every axis must be positive");
      const int64_t needed = cortado::ValueCount(channels, height, width);
      CORTADO_REQUIRE(needed >= 0, "record '", key, "' of '", db_path, "' has shape ",
                      ShapeText(channels, height, width), " (C×H×W), more than 2^63 values");
      size = static_cast<size_t>(needed);
    }
    CORTADO_REQUIRE(d->channels() == channels && d->height() == height && d->width() == width, "record '",
                    key, "' of '", db_path, "' is ", ShapeText(d->channels(), d->height(), d->width()),
                    " (C×H×W) but the first record is ", ShapeText(channels, height, width));
    const bool from_bytes = !d->data().empty();
    if (from_bytes) {
      CORTADO_REQUIRE(d->data().size() == size, "record '", key, "' of '", db_path, "' holds ",
                      d->data().size(), " bytes of pixels; its shape needs ", size);
    } else {
      CORTADO_REQUIRE(size_t(d->float_data_size()) == size, "record '", key, "' of '", db_path, "' holds ",
                      d->float_data_size(), " float values; its shape needs ", size);
    }
    if (n == 0) sum.assign(size, 0.0);
    if (from_bytes) {
      const auto* pixels = reinterpret_cast<const uint8_t*>(d->data().data());
      for (size_t i = 0; i < size; ++i) sum[i] += pixels[i];
    } else {
      for (size_t i = 0; i < size; ++i) sum[i] += d->float_data(static_cast<int>(i));
    }
    if ((n + 1) % 10000 == 0) LOG(INFO) << "Processed " << n + 1 << " files.";
  }
  if (count % 10000 != 0) LOG(INFO) << "Processed " << count << " files.";

  cortado::BlobProto mean;
  mean.set_num(1);
  mean.set_channels(channels);
  mean.set_height(height);
  mean.set_width(width);
  for (double s : sum) mean.add_data(static_cast<float>(s / double(count)));
  if (!mean_path.empty()) {
    LOG(INFO) << "Write to " << mean_path;
    cortado::WriteProtoToBinaryFile(mean, mean_path);
  }
  LOG(INFO) << "Number of channels: " << channels;
  const size_t dim = size_t(height) * width;
  for (int c = 0; c < channels; ++c) {
    double total = 0;
    for (size_t i = 0; i < dim; ++i) total += sum[c * dim + i];
    LOG(INFO) << "mean_value channel [" << c << "]: " << total / double(count) / double(dim);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const char* usage =
      "Computes the mean image of an LMDB or a LevelDB of Datums.\n"
      "Usage: compute_image_mean [--backend=lmdb|leveldb] DB [MEAN.binaryproto]";
  return cortado::RunTool(argc, argv, usage, [](int argc, char** argv) {
    CORTADO_REQUIRE(argc == 2 || argc == 3, "expected 1 or 2 arguments, got ", argc - 1,
                    "; usage: compute_image_mean [--backend=lmdb|leveldb] DB [MEAN.binaryproto] (see --help)");
    if (argc == 3) cortado::RequireOutputIsNotAnInput(argv[2], {argv[1], std::string(argv[1]) + "/data.mdb"});
    return Compute(argv[1], argc == 3 ? argv[2] : "");
  });
}
