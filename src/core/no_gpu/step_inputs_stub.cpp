// step_inputs_stub.cpp — StepInputs in a CPU-only build: there is no GPU to feed.
#include "cortado/error.hpp"
#include "cortado/step_inputs.hpp"

namespace cortado {

struct StepInputs::State {};

namespace {
[[noreturn]] void NoCuda() { Fail("this build of Cortado has no GPU support (rebuild with the CUDA toolkit)"); }
}  // namespace

StepInputs::StepInputs(int) { NoCuda(); }
StepInputs::~StepInputs() = default;
int StepInputs::Reserve() { NoCuda(); }
void StepInputs::SetWord(int, uint64_t) { NoCuda(); }
void StepInputs::SetFloat(int, float) { NoCuda(); }
const uint64_t* StepInputs::device_word(int) const { NoCuda(); }
const float* StepInputs::device_float(int) const { NoCuda(); }
void StepInputs::Upload(Context&) { NoCuda(); }
StepInputs& StepInputsOf(Context&) { NoCuda(); }

}  // namespace cortado
