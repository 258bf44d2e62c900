// trainer.hpp — what the trainer's files share: tools/trainer.cpp holds main, the flags, the helpers
// that read them and the commands test, device_query and upgrade; train.cpp and time.cpp here hold the
// commands of those names. (This folder's sources join the trainer executable: tools/CMakeLists.txt.)
#pragma once

#include <gflags/gflags.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cortado/context.hpp"
#include "cortado/cortado.pb.h"

// The flags train and time read (defined in tools/trainer.cpp, which describes them).
DECLARE_string(solver);
DECLARE_string(model);
DECLARE_string(output);
DECLARE_string(weights);
DECLARE_string(snapshot);
DECLARE_int32(iterations);
DECLARE_string(phase);
DECLARE_string(gpu);
DECLARE_int32(threads);
DECLARE_double(exchange_bucket_mb);
DECLARE_bool(cuda_graph);
DECLARE_bool(memory_reuse);
DECLARE_bool(fuse);
DECLARE_string(precision);
DECLARE_string(layout);
DECLARE_bool(metrics);
DECLARE_bool(plan_only);
DECLARE_int32(batch_size);
DECLARE_string(sigint_effect);
DECLARE_string(sighup_effect);

namespace trainer {

// ---- the flags' helpers (tools/trainer.cpp) ---------------------------------------------------------

std::vector<std::string> SplitCommas(const std::string& text);
// The GPU ids --gpu names ("all": every GPU, at least id 0); empty without --gpu.
std::vector<int> GpuIdsFromFlag();
// The GPU test and time use: the first --gpu id (-1 without --gpu).
int GpuFromFlag();
// The GPU settings: the solver's fields (train) or the defaults (test, time), with the flags that
// were given on top.
void ApplyGpuFlags(cortado::SolverParameter* param);
// test and time: the defaults with the GPU flags applied.
cortado::GpuSettings GpuSettingsFromFlags();
// test and time: a context for --gpu's device (or the CPU), with the GPU flags applied.
std::unique_ptr<cortado::Context> ContextFromFlags();
// test and time: --batch_size and --memory_reuse applied to the net.
void ApplyNetFlags(cortado::NetParameter* param);
// --precision as a storage type (an unknown name is an Error).
cortado::Type PrecisionFromFlag();
// --layout as a Packing (an unknown name is an Error).
cortado::Packing LayoutFromFlag();
cortado::NetState StateFromFlags(cortado::Phase phase);
// --plan_only: prints the plan at the flags' batch and, with --max_memory, the largest batch that fits.
// plan_at(batch) plans at that batch (0: the prototxt's) and returns the bytes and the summary.
int PrintPlan(const std::function<size_t(int, std::string*)>& plan_at, const std::string& device);

// ---- the commands in this folder (each returns the exit code) --------------------------------------

// train, in this process or (under mpirun) as one of its ranks (train.cpp).
int TrainAnyWhere();
// time: the per-layer forward and backward times of --model (time.cpp).
int Time();

}  // namespace trainer
