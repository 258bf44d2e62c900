// cpu_engine_choice.hpp — choosing a CPU layer's engine by timing, as cuDNN's Find does on the GPU:
// Cortado's own loops (im2col for Convolution) against oneDNN's primitives, for Convolution, Pooling
// and LRN.
//
// A shape is timed once per machine (CPU model, oneDNN's instruction set, threads): the winner is
// recorded in $CORTADO_CACHE_DIR/cpu_engines.txt (default ~/.cache/cortado/, or
// $XDG_CACHE_HOME/cortado/), one line per layer type and shape, the first recorded standing. So later
// layers, nets and processes of the same shape compute alike: a resumed run continues bit for bit as
// the run it resumes. Delete the file to time again (after moving a machine's workload, say); without
// a writable cache folder, choices last one process.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace cortado {

class Blob;

// How a layer's CPU engine is chosen. The prototxt's `engine:` comes first (CAFFE: Cortado's own code;
// ONEDNN: oneDNN), then the process's CPU engine setting (im2col: own; onednn: oneDNN; auto: timing,
// or oneDNN untimed when only the memory plan is wanted). A build without oneDNN runs its own code.
enum class EngineRule { kOwn, kOneDnn, kTimed };
EngineRule CpuEngineRule(bool prototxt_caffe, bool prototxt_onednn, bool plan_only);
// The same from a ConvolutionParameter, PoolingParameter or LRNParameter (their Engine enums agree).
template <typename EngineParam>
EngineRule CpuEngineRule(const EngineParam& p, bool plan_only) {
  return CpuEngineRule(p.engine() == EngineParam::CAFFE, p.engine() == EngineParam::ONEDNN, plan_only);
}
// At set-up: `engine: ONEDNN` in a build without oneDNN is the user's mistake, named after `who`.
void RequireOneDnnWhereAsked(bool prototxt_onednn, const std::string& who);

// A byte count as floats, rounded up: the length of a scratch blob that holds them.
int FloatsFor(size_t bytes);

// Sizes a oneDNN layer's buffers for the primitives just made for its shape: `scratch` (a workspace
// blob, used within one call) to scratch_bytes, and `keeper` (a blob kept from forward to backward
// that also holds oneDNN's workspace; null when there is none) to workspace_bytes, never shorter than
// keeper_floats. Once memory is planned (`planned`), a shape that needs more than the planned
// capacities is an Error naming `who`.
void FitOneDnnBuffers(const std::string& who, bool planned, size_t scratch_bytes, Blob& scratch,
                      size_t workspace_bytes, Blob* keeper, int keeper_floats);

// An engine that may run a shape: its name (as logged and recorded) and its timing, the milliseconds
// of one forward and backward, or a negative value when it cannot run the shape (the reason in *why).
struct EngineCandidate {
  std::string name;
  std::function<double(std::string* why)> time;
};

// The index in `candidates` of the engine recorded for `shape` (the layer type and its dimensions, no
// spaces: "Pooling:8,64,112,112,..."), else of the fastest (each timed once, the times logged at
// verbosity 1 under `who`), recorded. Candidate 0, Cortado's own, can run every shape.
int ChooseEngineByTiming(const std::string& shape, const std::string& who, const std::vector<EngineCandidate>& candidates);

// The best of a few timed runs of `run` after an untimed one (fewer when a run is slow), in ms.
double BestMilliseconds(const std::function<void()>& run);
// Fills a timing buffer with small values of both signs (no zeros or denormals to flatter an engine).
void FillForTiming(std::vector<float>* values);

}  // namespace cortado
