// loss_stub.cpp — kernels/loss.hpp in a CPU-only build: every launcher is an Error saying the GPU path
// is missing (no GPU context can exist in such a build, so none is reached in practice).
#include "cortado/error.hpp"
#include "cortado/kernels/loss.hpp"

namespace cortado {

namespace {
[[noreturn]] void NoCuda() { Fail("this build of Cortado has no GPU support (rebuild with the CUDA toolkit)"); }
}  // namespace

void SigmoidCrossEntropyLossForwardGpu(Context&, int64_t, const float*, const float*, bool, int, bool, double, float*,
                                       float*) {
  NoCuda();
}
void SigmoidCrossEntropyLossBackwardGpu(Context&, int64_t, const float*, const float*, bool, int, const float*,
                                        const float*, float*) {
  NoCuda();
}

void ContrastiveLossForwardGpu(Context&, int64_t, int64_t, const float*, const float*, const float*, float, bool,
                               float*, float*, float*) {
  NoCuda();
}
void ContrastiveLossBackwardGpu(Context&, int64_t, int64_t, const float*, const float*, const float*, const float*,
                                float, bool, const float*, float, float*) {
  NoCuda();
}

int64_t HingeLossForwardGpu(Context&, int64_t, int64_t, const float*, const float*, bool, float*, float*, float*) {
  NoCuda();
}
void HingeLossBackwardGpu(Context&, int64_t, int64_t, const float*, const float*, bool, const float*, float*) {
  NoCuda();
}

int64_t MultinomialLogisticLossForwardGpu(Context&, int64_t, int64_t, const float*, const float*, float*, float*,
                                          float*) {
  NoCuda();
}
void MultinomialLogisticLossBackwardGpu(Context&, int64_t, int64_t, const float*, const float*, const float*,
                                        float*) {
  NoCuda();
}

}  // namespace cortado
