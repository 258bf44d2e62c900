// mnist_idx.cpp — MnistReader: MNIST's big-endian IDX image and label files, headers checked, read one
// image and label at a time.
#include <fstream>

#include "cortado/data.hpp"
#include "cortado/error.hpp"

namespace cortado {

namespace {

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

}  // namespace

struct MnistReader::Files {
  Files(const std::string& images_path, const std::string& labels_path)
      : images(images_path, 2051, "image"), labels(labels_path, 2049, "label") {}
  IdxFile images, labels;
};

MnistReader::MnistReader(const std::string& images_path, const std::string& labels_path)
    : files_(std::make_unique<Files>(images_path, labels_path)) {
  CORTADO_REQUIRE(files_->images.count == files_->labels.count, "'", images_path, "' holds ",
                  files_->images.count, " images but '", labels_path, "' holds ", files_->labels.count,
                  " labels");
  count_ = files_->images.count;
  rows_ = files_->images.ReadWord();
  cols_ = files_->images.ReadWord();
}

MnistReader::~MnistReader() = default;

void MnistReader::Next(char* pixels, uint8_t* label) {
  files_->images.Read(pixels, size_t(rows_) * cols_);
  char byte;
  files_->labels.Read(&byte, 1);
  *label = static_cast<uint8_t>(byte);
}

}  // namespace cortado
