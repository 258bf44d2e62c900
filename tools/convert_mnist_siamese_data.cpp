// convert_mnist_siamese_data.cpp — MNIST's IDX files into a database of image pairs for Caffe's siamese
// example (examples/siamese/create_mnist_siamese.sh), as Caffe's tool: for each of the N items, two
// indices i and j drawn uniformly at random (each rng() % N, i first, from a std::mt19937 seeded with
// --seed — the generator Caffe's caffe_rng_rand uses), one Datum of 2×rows×cols uint8 pixels (channel 0
// image i, channel 1 image j) with label 1 when their digits are equal, else 0; keys "%08d" by item.
// LevelDB by default, as Caffe writes it; --backend=lmdb for an LMDB.
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cortado/cortado.pb.h"
#include "cortado/data/db_writer.hpp"
#include "cortado/data/mnist.hpp"
#include "cortado/data/records.hpp"
#include "cortado/error.hpp"
#include "cortado/tool.hpp"

DEFINE_string(backend, "leveldb", "The database format to write: leveldb (Caffe's) or lmdb");
DEFINE_uint32(seed, 1, "Seed of the generator that draws the pairs");

namespace {

int Convert(const std::string& images_path, const std::string& labels_path, const std::string& db_path) {
  const cortado::DataParameter::DB backend = cortado::ParseBackendFlag(FLAGS_backend);
  cortado::MnistReader mnist(images_path, labels_path);
  const uint32_t count = mnist.count();
  const size_t image_bytes = size_t(mnist.rows()) * mnist.cols();
  CORTADO_REQUIRE(count > 0, "'", images_path, "' holds no images");
  std::vector<char> images(count * image_bytes);
  std::vector<uint8_t> labels(count);
  for (uint32_t i = 0; i < count; ++i) mnist.Next(images.data() + i * image_bytes, &labels[i]);

  auto db = cortado::CreateDbWriter(backend, db_path, "");
  LOG(INFO) << "A total of " << count << " items.";
  LOG(INFO) << "Rows: " << mnist.rows() << " Cols: " << mnist.cols();
  cortado::Datum datum;
  datum.set_channels(2);  // one channel for each image of the pair
  datum.set_height(static_cast<int>(mnist.rows()));
  datum.set_width(static_cast<int>(mnist.cols()));
  std::mt19937 rng(FLAGS_seed);
  std::string pixels(2 * image_bytes, '\0'), value;
  uint64_t similar = 0;
  char key[16];
  for (uint32_t item = 0; item < count; ++item) {
    const uint32_t i = rng() % count;
    const uint32_t j = rng() % count;
    std::memcpy(pixels.data(), images.data() + i * image_bytes, image_bytes);
    std::memcpy(pixels.data() + image_bytes, images.data() + j * image_bytes, image_bytes);
    datum.set_data(pixels);
    datum.set_label(labels[i] == labels[j] ? 1 : 0);
    similar += labels[i] == labels[j];
    CORTADO_REQUIRE(datum.SerializeToString(&value), "cannot serialise item ", item);
    std::snprintf(key, sizeof(key), "%08u", item);
    db->Put(key, value);
  }
  db->Finish();
  LOG(INFO) << "Processed " << count << " pairs (" << similar << " of the same digit).";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const char* usage =
      "Converts MNIST's IDX files into a database of random image pairs for a siamese network.\n"
      "Usage: convert_mnist_siamese_data [--backend=leveldb|lmdb] [--seed=N] input_image_file "
      "input_label_file output_db_file";
  return cortado::RunTool(argc, argv, usage, [usage](int argc, char** argv) {
    if (argc != 4) {
      std::fprintf(stderr, "%s\n", usage);
      return 1;
    }
    return Convert(argv[1], argv[2], argv[3]);
  });
}
