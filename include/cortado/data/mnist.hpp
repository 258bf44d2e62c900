// mnist.hpp — MnistReader: MNIST's IDX image and label files, checked, read image by image.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace cortado {

// An MNIST image file and its label file (IDX, big-endian: images magic 2051, count, rows, cols, then
// count·rows·cols uint8 pixels; labels magic 2049, count, then count uint8 labels), for
// convert_mnist_data and convert_mnist_siamese_data (src/data/mnist_idx.cpp). The constructor checks
// both headers: a missing file, a wrong magic number or differing counts is an Error naming the file.
class MnistReader {
 public:
  MnistReader(const std::string& images_path, const std::string& labels_path);
  ~MnistReader();
  uint32_t count() const { return count_; }
  uint32_t rows() const { return rows_; }
  uint32_t cols() const { return cols_; }
  // Reads the next image (rows·cols bytes into pixels) and its label; a truncated file is an Error.
  void Next(char* pixels, uint8_t* label);

 private:
  struct Files;
  std::unique_ptr<Files> files_;
  uint32_t count_ = 0, rows_ = 0, cols_ = 0;
};

}  // namespace cortado
