// caffemodel_h5_fuzzer.cpp — a .caffemodel.h5 (NetParameter weights in Caffe's HDF5 layout), as
// trainer --weights and trainer test read one: copied by layer name into SmallNet (fuzz_util.hpp; the
// seeds are its weights), which then runs forward. libhdf5 reads the file.
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = cortado::fuzz::WriteInput("weights.caffemodel.h5", data, size);
  return cortado::fuzz::Run([&] { cortado::fuzz::LoadIntoSmallNet(path); });
}
