// fuzz_util.hpp — what the fuzz harnesses share (fuzz/README.md).
//
// Each harness is one LLVMFuzzerTestOneInput that feeds its bytes to the code a user's file of that
// kind reaches, as the tools do. An input may be refused with a cortado::Error (a user's mistake,
// reported as one line): that is the expected answer to a bad file. Anything else — a signal, an abort
// (a CHECK, an LMDB assertion), another exception escaping, a sanitizer report — is a finding.
//
// The harness process works in a directory of its own, /dev/shm/cortado_fuzz_<program> (emptied at
// start, held by a lock; under /tmp without /dev/shm, a random name for a second instance), which is
// its working directory, so the files the inputs make or name never land anywhere else. Its path is the
// same in every run, so that a fixed number of fuzzing runs covers the same edges each time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "cortado/cortado.pb.h"
#include "cortado/data/records.hpp"

namespace cortado::fuzz {

// Quiet logging (glog's FATAL only), one CPU thread, and the working directory; once per process.
// Returns that directory.
const std::string& Setup();

// Runs body; returns 0 when it returned or threw cortado::Error (printed when the environment sets
// CORTADO_FUZZ_VERBOSE). Any other exception escapes, which ends the process: a finding.
int Run(const std::function<void()>& body);

// Writes the bytes to <work directory>/<name> (replacing it) and returns the path.
std::string WriteInput(const std::string& name, const uint8_t* data, size_t size);
std::string WriteInput(const std::string& name, const std::string& bytes);

// Empties <work directory>/<name> (a folder for one input's files) and returns its path.
std::string FreshFolder(const std::string& name);

// A small trainable net, fuzz/small_net.prototxt: DummyData "data" (2×1×6×6) and "label" (2),
// Convolution "conv", BatchNorm "bn", Scale "scale", ReLU "relu", InnerProduct "ip", SoftmaxWithLoss
// "loss". Its file's path is SmallNetPath().
NetParameter SmallNet();
std::string SmallNetPath();

// SmallNet's solver: SGD at a fixed rate 0.01 with momentum 0.9 (one history blob per parameter), on the
// CPU, seed 1, snapshots to `snapshot_prefix`.
SolverParameter SmallSolver(const std::string& snapshot_prefix);

// The weights file at `path` loaded into SmallNet (Net::LoadWeightsFile, as trainer --weights and
// trainer test load one), which then runs forward.
void LoadIntoSmallNet(const std::string& path);

// The bytes a net's memory plan asks for, planned on a planning context: every layer built and
// shaped, nothing allocated. `source` names the net in errors.
size_t PlannedBytes(const NetParameter& param, const std::string& source);

// A solver of SmallNet (SmallSolver) restored from the snapshot state at `path` (binary, or
// HDF5 for a name ending in .h5), as trainer train --snapshot does, then trained one iteration.
void RestoreAndStep(const std::string& path);

// Reads every record of `records` (up to 4096) and parses it as a Datum, as the Data layer's workers do.
void ParseEveryRecord(const RecordSource& records);

// Whether a net parsed from an input may be run: it must write no files (HDF5Output) and read no
// data the harness does not control (a Python layer would be refused anyway).
bool SafeToRun(const NetParameter& net);

}  // namespace cortado::fuzz
