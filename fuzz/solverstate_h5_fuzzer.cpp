// solverstate_h5_fuzzer.cpp — a .solverstate.h5 (SolverState in Caffe's HDF5 layout), restored as
// trainer train --snapshot restores one into a solver of SmallNet (fuzz_util.hpp), which then trains
// one more iteration. libhdf5 reads the file.
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = cortado::fuzz::WriteInput("state.solverstate.h5", data, size);
  return cortado::fuzz::Run([&] { cortado::fuzz::RestoreAndStep(path); });
}
