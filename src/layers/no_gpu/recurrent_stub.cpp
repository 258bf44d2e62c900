// recurrent_stub.cpp — kernels/recurrent.hpp in a CPU-only build: every launcher is an Error saying the
// GPU path is missing (no GPU context can exist in such a build, so none is reached in practice).
#include "cortado/error.hpp"
#include "cortado/kernels/recurrent.hpp"

namespace cortado {

namespace {
[[noreturn]] void NoCuda() { Fail("this build of Cortado has no GPU support (rebuild with the CUDA toolkit)"); }
}  // namespace

void LstmUnitForwardGpu(Context&, int, int, const float*, const float*, const float*, float*, float*) {
  NoCuda();
}
void LstmUnitBackwardGpu(Context&, int, int, const float*, const float*, const float*, const float*,
                         const float*, const float*, float*, float*) {
  NoCuda();
}
void ScaleRowsGpu(Context&, int, int, const float*, const float*, bool, float*) { NoCuda(); }
void AddBroadcastGpu(Context&, int64_t, int64_t, const float*, float*) { NoCuda(); }

}  // namespace cortado
