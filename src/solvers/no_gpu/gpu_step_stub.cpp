// gpu_step_stub.cpp — GpuStepper in a CPU-only build: solvers never make one (there is no GPU
// context), and asking for one anyway is a clear error.
#include "cortado/error.hpp"
#include "cortado/gpu_step.hpp"

namespace cortado {

struct GpuStepper::Graphs {};
struct GpuStepper::Poll {};

namespace {
[[noreturn]] void NoCuda() { Fail("this build of Cortado has no GPU support (rebuild with the CUDA toolkit)"); }
}  // namespace

GpuStepper::GpuStepper(Context& ctx, Net& net, const SolverParameter& param, UpdateRule& rule, bool)
    : ctx_(ctx), net_(net), param_(param), rule_(rule) {
  NoCuda();
}
GpuStepper::~GpuStepper() = default;
void GpuStepper::RequestMemory(MemoryPlan&) { NoCuda(); }
void GpuStepper::Bind(const std::vector<float*>&) { NoCuda(); }
void GpuStepper::RunPasses(int) { NoCuda(); }
void GpuStepper::RunUpdate(int) { NoCuda(); }
void GpuStepper::ResetLossAverage() { NoCuda(); }
float GpuStepper::SmoothedLoss() { NoCuda(); }
float GpuStepper::GradientNorm() { NoCuda(); }
int GpuStepper::FirstNonFiniteIteration() { NoCuda(); }
int GpuStepper::PolledNonFiniteIteration() const { NoCuda(); }
GpuStepper::LossScaleState GpuStepper::LossScale() { NoCuda(); }
void GpuStepper::SetLossScale(float, int) { NoCuda(); }

}  // namespace cortado
