// caffemodel_h5_fuzzer.cpp — a .caffemodel.h5 (NetParameter weights in Caffe's HDF5 layout), as
// trainer --weights and trainer test read one: copied by layer name into SmallNet (fuzz_util.hpp; the
// seeds are its weights), which then runs forward. libhdf5 reads the file.
#include "cortado/net.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = cortado::fuzz::WriteInput("weights.caffemodel.h5", data, size);
  return cortado::fuzz::Run([&] {
    cortado::Context ctx(cortado::Device::kCPU, 1);
    cortado::Net net(cortado::fuzz::SmallNet(), ctx, "small.prototxt");
    net.AllocateOwnArena();
    net.LoadWeightsFile(path);
    net.Forward();
  });
}
