// tool.hpp — what every command-line tool shares: glog/gflags initialisation with Caffe's log style
// (glog prefix without the year), and the rule that a user's mistake ends the program with one line on
// stderr and exit code 1, never a stack trace.
#pragma once

#include <functional>
#include <string>
#include <utility>

#include "cortado/context.hpp"  // Device

namespace cortado {

// Parses flags (gflags), sets up logging to stderr, runs body(argc, argv) with the remaining
// arguments, and turns a cortado::Error (or any std::exception) into "<tool>: error: <message>" + exit 1.
int RunTool(int argc, char** argv, const char* usage, const std::function<int(int, char**)>& body);

// Prints a user's mistake as RunTool does, "<tool>: error: <message>" on stderr (flushed), for a tool
// that must do more than return 1 afterwards (a rank of mpirun's ends every rank).
void PrintToolError(const std::string& message);

// The device of a tool's --gpu: for gpu >= 0, that GPU ("Use GPU with device ID N", Caffe's line) where
// the machine has a GPU, else the CPU, logging why ("--gpu=<flag_text> but no GPU was found; running
// on the CPU"); for gpu < 0, the CPU. The id itself is checked where the GPU's context is made.
std::pair<Device, int> DeviceForGpuFlag(int gpu, const std::string& flag_text);

}  // namespace cortado
