// convert_mnist_data.cpp — MNIST's IDX files (big-endian; magic 2051 for images, 2049 for labels; read
// by cortado::MnistReader) into an LMDB or a LevelDB of Datums (1×rows×cols uint8 pixels and the
// label), keys "%08d" by index.
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "cortado/cortado.pb.h"
#include "cortado/data/db_writer.hpp"
#include "cortado/data/mnist.hpp"
#include "cortado/data/records.hpp"
#include "cortado/error.hpp"
#include "cortado/tool.hpp"

DEFINE_string(backend, "lmdb", "The database format to write: lmdb or leveldb");

namespace {

int Convert(const std::string& images_path, const std::string& labels_path, const std::string& db_path) {
  const cortado::DataParameter::DB backend = cortado::ParseBackendFlag(FLAGS_backend);
  cortado::MnistReader mnist(images_path, labels_path);
  const uint32_t rows = mnist.rows(), cols = mnist.cols();

  auto db = cortado::CreateDbWriter(backend, db_path, "");
  LOG(INFO) << "A total of " << mnist.count() << " items.";
  LOG(INFO) << "Rows: " << rows << " Cols: " << cols;
  cortado::Datum datum;
  datum.set_channels(1);
  datum.set_height(static_cast<int>(rows));
  datum.set_width(static_cast<int>(cols));
  std::string pixels(size_t(rows) * cols, '\0');
  std::string value;
  char key[16];
  for (uint32_t i = 0; i < mnist.count(); ++i) {
    uint8_t label;
    mnist.Next(pixels.data(), &label);
    datum.set_data(pixels);
    datum.set_label(label);
    CORTADO_REQUIRE(datum.SerializeToString(&value), "cannot serialise item ", i);
    std::snprintf(key, sizeof(key), "%08u", i);
    db->Put(key, value);
  }
  db->Finish();
  LOG(INFO) << "Processed " << mnist.count() << " files.";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const char* usage =
      "Converts MNIST's IDX files into an LMDB or a LevelDB of Datums.\n"
      "Usage: convert_mnist_data [--backend=lmdb|leveldb] IMAGES LABELS DB";
  return cortado::RunTool(argc, argv, usage, [usage](int argc, char** argv) {
    if (argc != 4) {
      std::fprintf(stderr, "%s\n", usage);
      return 1;
    }
    return Convert(argv[1], argv[2], argv[3]);
  });
}
