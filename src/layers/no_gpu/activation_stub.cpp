// activation_stub.cpp — kernels/activation.hpp in a CPU-only build: every launcher is an Error saying
// the GPU path is missing (no GPU context can exist in such a build, so none is reached in practice).
#include "cortado/error.hpp"
#include "cortado/kernels/activation.hpp"

namespace cortado {

namespace {
[[noreturn]] void NoCuda() { Fail("this build of Cortado has no GPU support (rebuild with the CUDA toolkit)"); }
}  // namespace

void AbsValForwardGpu(Context&, int64_t, const float*, float*) { NoCuda(); }
void AbsValBackwardGpu(Context&, int64_t, const float*, const float*, float*) { NoCuda(); }
void BNLLForwardGpu(Context&, int64_t, const float*, float*) { NoCuda(); }
void BNLLBackwardGpu(Context&, int64_t, const float*, const float*, float*) { NoCuda(); }
void PowerForwardGpu(Context&, int64_t, float, float, float, const float*, float*) { NoCuda(); }
void PowerBackwardGpu(Context&, int64_t, float, float, float, const float*, const float*, float*) { NoCuda(); }
void ExpForwardGpu(Context&, int64_t, float, float, const float*, float*) { NoCuda(); }
void ExpBackwardGpu(Context&, int64_t, float, const float*, const float*, float*) { NoCuda(); }
void LogForwardGpu(Context&, int64_t, float, float, float, const float*, float*) { NoCuda(); }
void LogBackwardGpu(Context&, int64_t, float, float, float, const float*, const float*, float*) { NoCuda(); }
void ThresholdForwardGpu(Context&, int64_t, float, const float*, float*) { NoCuda(); }
void ClipForwardGpu(Context&, int64_t, float, float, const float*, float*) { NoCuda(); }
void ClipBackwardGpu(Context&, int64_t, float, float, const float*, const float*, float*) { NoCuda(); }
void ELUForwardGpu(Context&, int64_t, float, const float*, float*) { NoCuda(); }
void ELUBackwardGpu(Context&, int64_t, float, const float*, const float*, const float*, float*) { NoCuda(); }
void SwishForwardGpu(Context&, int64_t, float, const float*, float*, float*) { NoCuda(); }
void SwishBackwardGpu(Context&, int64_t, float, const float*, const float*, const float*, float*) { NoCuda(); }
void PReLUForwardGpu(Context&, int64_t, int, int64_t, bool, const float*, const float*, float*) { NoCuda(); }
void PReLUBackwardGpu(Context&, int64_t, int, int64_t, bool, const float*, const float*, const float*, float*) {
  NoCuda();
}
void PReLUSlopeGradGpu(Context&, int, int, int64_t, bool, const float*, const float*, float*, float*) { NoCuda(); }

}  // namespace cortado
