// mnist_idx_fuzzer.cpp — MNIST's IDX image and label files, converted as convert_mnist_data converts
// them (headers checked against the files, each image read, a Datum per image put into a new LMDB).
// The input is the image file, then the label file, each behind its size as 8 hex digits and '\n'.
#include <string>

#include "cortado/data/db_writer.hpp"
#include "cortado/data/mnist.hpp"
#include "fuzz_util.hpp"

namespace {

// The next "<size as 8 hex digits>\n<bytes>" part of input from `at`; "" when there is none.
std::string NextPart(const std::string& input, size_t* at) {
  if (*at + 9 > input.size() || input[*at + 8] != '\n') return "";
  const size_t length = std::strtoul(input.substr(*at, 8).c_str(), nullptr, 16);
  const std::string part = input.substr(*at + 9, length);
  *at += 9 + part.size();
  return part;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  size_t at = 0;
  const std::string images = cortado::fuzz::WriteInput("images-idx3-ubyte", NextPart(input, &at));
  const std::string labels = cortado::fuzz::WriteInput("labels-idx1-ubyte", NextPart(input, &at));
  const std::string db = cortado::fuzz::FreshFolder("out") + "/db";
  return cortado::fuzz::Run([&] {
    cortado::MnistReader mnist(images, labels);
    auto writer = cortado::CreateDbWriter(cortado::DataParameter::LMDB, db, "");
    cortado::Datum datum;
    datum.set_channels(1);
    datum.set_height(static_cast<int>(mnist.rows()));
    datum.set_width(static_cast<int>(mnist.cols()));
    std::string pixels(size_t(mnist.rows()) * mnist.cols(), '\0');
    for (uint32_t i = 0; i < mnist.count(); ++i) {
      uint8_t label = 0;
      mnist.Next(pixels.data(), &label);
      datum.set_data(pixels);
      datum.set_label(label);
      writer->Put(std::to_string(i), datum.SerializeAsString());
    }
    writer->Finish();
  });
}
