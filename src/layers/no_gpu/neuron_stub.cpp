// neuron_stub.cpp — kernels/neuron.hpp in a CPU-only build: every launcher is an Error saying the GPU
// path is missing (no GPU context can exist in such a build, so none is reached in practice).
#include "cortado/error.hpp"
#include "cortado/kernels/neuron.hpp"

namespace cortado {

namespace {
[[noreturn]] void NoCuda() { Fail("this build of Cortado has no GPU support (rebuild with the CUDA toolkit)"); }
}  // namespace

void DropoutForwardGpu(Context&, int64_t, const uint64_t*, uint64_t, float, const float*, float*, float*) { NoCuda(); }
void CopyRowsGpu(Context&, int64_t, int64_t, const float*, int64_t, float*, int64_t) { NoCuda(); }
void EltwiseMaxStepGpu(Context&, int64_t, const float*, int, float*, float*) { NoCuda(); }
void EltwiseMaxBackwardGpu(Context&, int64_t, const float*, int, const float*, float*) { NoCuda(); }
void EuclideanLossForwardGpu(Context&, int64_t, const float*, const float*, double, float*) { NoCuda(); }
void EuclideanLossBackwardGpu(Context&, int64_t, const float*, const float*, const float*, float, float, float*) {
  NoCuda();
}
void UploadAndWait(Context&, int64_t, const float*, float*) { NoCuda(); }

}  // namespace cortado
