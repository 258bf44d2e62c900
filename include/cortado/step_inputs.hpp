// step_inputs.hpp — the numbers a GPU step needs that change from step to step (the learning rate,
// Adam's bias correction, dropout seeds, the iteration), kept where kernels read them from the same
// device address every step, so that a step captured once as a CUDA graph replays with new values.
//
// At setup a user reserves a slot (one 64-bit word). Each step, before any of the step's work is
// queued, the host writes the slots (SetWord / SetFloat) and Upload() queues one copy of all of them
// from a page-locked staging ring to the device block, on the compute stream: kernels queued after it
// see this step's values; kernels of the previous step, queued before it, saw theirs. The ring holds
// kRing stagings, each reused only after its copy has finished, so the host never overwrites bytes a
// queued copy has yet to read. No CUDA types: a CPU-only build's StepInputsOf fails clearly.
#pragma once

#include <cstdint>
#include <memory>

#include "cortado/context.hpp"

namespace cortado {

class StepInputs {
 public:
  static constexpr int kCapacity = 1024;  // slots
  static constexpr int kRing = 16;        // stagings in flight

  explicit StepInputs(int device);
  ~StepInputs();
  StepInputs(const StepInputs&) = delete;
  StepInputs& operator=(const StepInputs&) = delete;

  int Reserve();  // a new slot, zero until set; Error past kCapacity
  void SetWord(int slot, uint64_t value);
  void SetFloat(int slot, float value);  // in the slot's low 32 bits (what device_float reads)
  const uint64_t* device_word(int slot) const;
  const float* device_float(int slot) const;
  // Queues the copy of every slot to the device on ctx's compute stream; returns at once.
  void Upload(Context& ctx);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The context's step inputs (one per GPU context). Fails on a CPU context or in a CPU-only build.
StepInputs& StepInputsOf(Context& ctx);

}  // namespace cortado
