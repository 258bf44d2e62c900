// conv_engine_choice.hpp — choosing a CPU convolution's engine by timing, as cuDNN's Find does on the
// GPU: im2col, oneDNN on Cortado's NCHW buffers, oneDNN in its own layouts.
//
// A shape is timed once per machine (CPU model, oneDNN's instruction set, threads): the winner is
// recorded in $CORTADO_CACHE_DIR/cpu_convolution_engines.txt (default ~/.cache/cortado/, or
// $XDG_CACHE_HOME/cortado/), one line per shape, the first recorded standing. So later layers, nets
// and processes of the same shape compute alike: a resumed run continues bit for bit as the run it
// resumes. Delete the file to time again (after moving a machine's workload, say); without a writable
// cache folder, choices last one process.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "cortado/im2col.hpp"  // ConvGeometry
#include "cortado/kernels/onednn.hpp"

namespace cortado {

enum class ConvCandidate { kIm2col, kOneDnnPlain, kOneDnnNative };

struct ConvShapeKey {
  int num, num_output, group;
  ConvGeometry geom;  // with the bottom's channels, height and width
  bool bias;
};

// Milliseconds of one forward and backward with a candidate (`conv`: its oneDNN primitives, null for
// im2col).
using ConvEngineTimer = std::function<double(ConvCandidate, const OneDnnConvolution* conv)>;

// The candidate recorded for this shape, else the fastest (timed with `timer`, the times logged at
// verbosity 1 under `who`), recorded. oneDNN candidates it cannot make are skipped.
ConvCandidate ChooseConvEngine(const ConvShapeKey& key, const std::string& who, const ConvEngineTimer& timer);

// The best of a few timed runs of `run` after an untimed one (fewer when a run is slow), in ms.
double BestMilliseconds(const std::function<void()>& run);
// Fills a timing buffer with small values of both signs (no zeros or denormals to flatter an engine).
void FillForTiming(std::vector<float>* values);

}  // namespace cortado
