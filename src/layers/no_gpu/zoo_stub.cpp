// zoo_stub.cpp — kernels/zoo.hpp in a CPU-only build: every launcher is an Error saying the GPU path is
// missing (no GPU context can exist in such a build, so none is reached in practice).
#include "cortado/error.hpp"
#include "cortado/kernels/zoo.hpp"

namespace cortado {

namespace {
[[noreturn]] void NoCuda() { Fail("this build of Cortado has no GPU support (rebuild with the CUDA toolkit)"); }
}  // namespace

int64_t EmbedForwardGpu(Context&, int64_t, int64_t, int64_t, const float*, const float*, const float*, float*, float*,
                        float*) {
  NoCuda();
}
void EmbedWeightGradientGpu(Context&, int64_t, int64_t, int64_t, const float*, const float*, float*) { NoCuda(); }

void MVNForwardGpu(Context&, int64_t, int64_t, bool, float, const float*, float*, float*) { NoCuda(); }
void MVNBackwardGpu(Context&, int64_t, int64_t, bool, const float*, const float*, const float*, float*) { NoCuda(); }

void FilterReadSelectorGpu(Context&, int64_t, const float*, float*) { NoCuda(); }
void FilterUploadMapsGpu(Context&, const std::vector<int>&, int*) { NoCuda(); }
void FilterForwardGpu(Context&, int64_t, int64_t, const int*, const float*, float*) { NoCuda(); }
void FilterBackwardGpu(Context&, int64_t, int64_t, const int*, const float*, float*) { NoCuda(); }

int64_t BatchReindexForwardGpu(Context&, int64_t, int64_t, int64_t, const float*, const float*, float*, float*,
                               float*) {
  NoCuda();
}
void BatchReindexBackwardGpu(Context&, int64_t, int64_t, int64_t, const float*, const float*, float*) { NoCuda(); }

int64_t InfogainLossForwardGpu(Context&, int64_t, int64_t, int64_t, const float*, const float*, const float*, bool, int,
                               bool, double, float*, float*, float*) {
  NoCuda();
}
void InfogainRowSumsGpu(Context&, int64_t, const float*, float*) { NoCuda(); }
void InfogainLossBackwardGpu(Context&, int64_t, int64_t, int64_t, const float*, const float*, const float*,
                             const float*, bool, int, const float*, const float*, float*) {
  NoCuda();
}

}  // namespace cortado
