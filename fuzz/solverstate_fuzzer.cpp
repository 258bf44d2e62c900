// solverstate_fuzzer.cpp — a .solverstate (binary SolverState), restored as trainer train --snapshot
// restores one into a solver of SmallNet (fuzz_util.hpp: SGD with momentum, one history blob per
// parameter; the seeds are its snapshots), which then trains one more iteration.
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = cortado::fuzz::WriteInput("state.solverstate", data, size);
  return cortado::fuzz::Run([&] { cortado::fuzz::RestoreAndStep(path); });
}
