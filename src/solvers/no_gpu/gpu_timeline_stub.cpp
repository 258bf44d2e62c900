// gpu_timeline_stub.cpp — GpuTimeline in a CPU-only build: there is no GPU to time (no GPU context can
// exist here, so none is reached in practice).
#include "cortado/error.hpp"
#include "cortado/solver.hpp"

namespace cortado {

struct GpuTimeline::Events {};

namespace {
[[noreturn]] void NoGpu() {
  Fail("[GpuTimeline] this build of Cortado has no GPU support (rebuild with the CUDA toolkit)");
}
}  // namespace

GpuTimeline::GpuTimeline(Context& ctx, int) : ctx_(ctx) { NoGpu(); }
GpuTimeline::~GpuTimeline() = default;
void GpuTimeline::Mark(int) { NoGpu(); }
void GpuTimeline::Wait() { NoGpu(); }
double GpuTimeline::Milliseconds(int, int) const { NoGpu(); }

}  // namespace cortado
