// norm_stub.cpp — kernels/norm.hpp in a CPU-only build: every launcher is an Error saying the GPU
// path is missing (no GPU context can exist in such a build, so none is reached in practice).
#include "cortado/error.hpp"
#include "cortado/kernels/norm.hpp"

namespace cortado {

namespace {
[[noreturn]] void NoCuda() { Fail("this build of Cortado has no GPU support (rebuild with the CUDA toolkit)"); }
}  // namespace

void LrnForwardGpu(Context&, const LrnShape&, const float*, float*, float*) { NoCuda(); }
void LrnBackwardGpu(Context&, const LrnShape&, const float*, const float*, const float*, const float*, float*) {
  NoCuda();
}

void BatchNormBatchStatsGpu(Context&, int64_t, int64_t, int64_t, const float*, float, float, float, float*, float*,
                            float*, float*, float*, float*) {
  NoCuda();
}
void BatchNormGlobalStatsGpu(Context&, int64_t, float, const float*, const float*, const float*, float*, float*) {
  NoCuda();
}
void BatchNormForwardGpu(Context&, int64_t, int64_t, int64_t, const float*, const float*, const float*, float*) {
  NoCuda();
}
void BatchNormBackwardGpu(Context&, int64_t, int64_t, int64_t, bool, const float*, const float*, const float*, float*,
                          float*, float*) {
  NoCuda();
}

void ScaleBiasForwardGpu(Context&, int64_t, int64_t, int64_t, const float*, const float*, const float*, float*) {
  NoCuda();
}
void ChannelSumGpu(Context&, int64_t, int64_t, int64_t, const float*, const float*, bool, float*, float*) {
  NoCuda();
}

}  // namespace cortado
