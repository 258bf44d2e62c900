// convert_mnist_data.cpp — MNIST's IDX files (big-endian; magic 2051 for images, 2049 for labels)
// into an LMDB of Datums (1×rows×cols uint8 pixels and the label), keys "%08d" by index.
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

#include "cortado/cortado.pb.h"
#include "cortado/data.hpp"
#include "cortado/error.hpp"
#include "cortado/tool.hpp"

DEFINE_string(backend, "lmdb", "The database format to write; only lmdb is supported");

namespace {

using cortado::Fail;

// One IDX file: its header read and checked, the stream left at the first item.
struct IdxFile {
  IdxFile(const std::string& path, uint32_t expected_magic, const char* kind) : path(path) {
    in.open(path, std::ios::binary);
    CORTADO_REQUIRE(in.good(), "cannot open ", kind, " file '", path, "'");
    const uint32_t magic = ReadWord();
    CORTADO_REQUIRE(magic == expected_magic, "'", path, "' is not an IDX ", kind, " file: magic number ",
                    magic, ", expected ", expected_magic);
    count = ReadWord();
  }

  uint32_t ReadWord() {  // a big-endian 32-bit integer
    unsigned char b[4];
    Read(reinterpret_cast<char*>(b), 4);
    return uint32_t(b[0]) << 24 | uint32_t(b[1]) << 16 | uint32_t(b[2]) << 8 | uint32_t(b[3]);
  }

  void Read(char* out, size_t n) {
    in.read(out, static_cast<std::streamsize>(n));
    CORTADO_REQUIRE(in.gcount() == static_cast<std::streamsize>(n), "'", path, "' is truncated");
  }

  std::string path;
  std::ifstream in;
  uint32_t count = 0;
};

int Convert(const std::string& images_path, const std::string& labels_path, const std::string& db_path) {
  if (FLAGS_backend == "leveldb") Fail("--backend=leveldb is not supported; use --backend=lmdb");
  if (FLAGS_backend != "lmdb") Fail("unknown --backend=", FLAGS_backend, "; use --backend=lmdb");
  IdxFile images(images_path, 2051, "image");
  IdxFile labels(labels_path, 2049, "label");
  CORTADO_REQUIRE(images.count == labels.count, "'", images_path, "' holds ", images.count,
                  " images but '", labels_path, "' holds ", labels.count, " labels");
  const uint32_t rows = images.ReadWord(), cols = images.ReadWord();

  cortado::LmdbWriter db(db_path, "");
  LOG(INFO) << "A total of " << images.count << " items.";
  LOG(INFO) << "Rows: " << rows << " Cols: " << cols;
  cortado::Datum datum;
  datum.set_channels(1);
  datum.set_height(static_cast<int>(rows));
  datum.set_width(static_cast<int>(cols));
  std::string pixels(size_t(rows) * cols, '\0');
  std::string value;
  char key[16];
  for (uint32_t i = 0; i < images.count; ++i) {
    images.Read(pixels.data(), pixels.size());
    char label;
    labels.Read(&label, 1);
    datum.set_data(pixels);
    datum.set_label(static_cast<unsigned char>(label));
    CORTADO_REQUIRE(datum.SerializeToString(&value), "cannot serialise item ", i);
    std::snprintf(key, sizeof(key), "%08u", i);
    db.Put(key, value);
  }
  db.Finish();
  LOG(INFO) << "Processed " << images.count << " files.";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const char* usage =
      "Converts MNIST's IDX files into an LMDB of Datums.\n"
      "Usage: convert_mnist_data [--backend=lmdb] IMAGES LABELS DB";
  return cortado::RunTool(argc, argv, usage, [usage](int argc, char** argv) {
    if (argc != 4) {
      std::fprintf(stderr, "%s\n", usage);
      return 1;
    }
    return Convert(argv[1], argv[2], argv[3]);
  });
}
