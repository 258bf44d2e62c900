// mnist_idx.cpp — MnistReader: MNIST's big-endian IDX image and label files, headers checked, read one
// image and label at a time.
#include <filesystem>
#include <fstream>

#include "cortado/data/mnist.hpp"
#include "cortado/error.hpp"

namespace cortado {

namespace {

// One IDX file: its header read and checked, the stream left at the first item.
struct IdxFile {
  IdxFile(const std::string& path, uint32_t expected_magic, const char* kind) : path(path) {
    std::error_code ec;
    CORTADO_REQUIRE(!std::filesystem::is_directory(path, ec), "cannot read ", kind, " file '", path,
                    "': it is a directory");
    in.open(path, std::ios::binary | std::ios::ate);
    CORTADO_REQUIRE(in.good(), "cannot open ", kind, " file '", path, "'");
    bytes = static_cast<uint64_t>(in.tellg());
    in.seekg(0);
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

  // The header's promise checked against the file before anything is allocated for it: `item_bytes`
  // bytes per item after a header of `header_bytes`.
  void CheckSize(uint64_t header_bytes, uint64_t item_bytes, const std::string& items) const {
    const uint64_t needed = header_bytes + uint64_t{count} * item_bytes;
    CORTADO_REQUIRE(bytes >= needed, "'", path, "' is truncated: its header counts ", count, " ", items, " (",
                    needed, " bytes with the header) but the file holds ", bytes, " bytes");
  }

  std::string path;
  std::ifstream in;
  uint64_t bytes = 0;  // the file's size
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
  CORTADO_REQUIRE(count_ > 0, "'", images_path, "' holds no images");
  rows_ = files_->images.ReadWord();
  cols_ = files_->images.ReadWord();
  CORTADO_REQUIRE(rows_ > 0 && cols_ > 0 && rows_ <= 65535 && cols_ <= 65535, "'", images_path,
                  "' has images of ", rows_, "×", cols_, " pixels; an IDX image file's rows and columns must be "
                  "between 1 and 65535");
  files_->images.CheckSize(16, uint64_t{rows_} * cols_,
                           "images of " + std::to_string(rows_) + "×" + std::to_string(cols_));
  files_->labels.CheckSize(8, 1, "labels");
}

MnistReader::~MnistReader() = default;

void MnistReader::Next(char* pixels, uint8_t* label) {
  files_->images.Read(pixels, size_t(rows_) * cols_);
  char byte;
  files_->labels.Read(&byte, 1);
  *label = static_cast<uint8_t>(byte);
}

}  // namespace cortado
