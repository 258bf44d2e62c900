// tool.hpp — what every command-line tool shares: glog/gflags initialisation with Caffe's log style
// (glog prefix without the year), and the rule that a user's mistake ends the program with one line on
// stderr and exit code 1, never a stack trace.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "cortado/context.hpp"  // Device

namespace cortado {

// Parses flags (gflags), sets up logging to stderr, runs body(argc, argv) with the remaining
// arguments, and turns a cortado::Error (or any std::exception) into "<tool>: error: <message>" + exit 1.
int RunTool(int argc, char** argv, const char* usage, const std::function<int(int, char**)>& body);

// What a tool says about one of its flags. CheckFlags holds every flag the user gave to its rule, the
// same way for every flag of every tool: a number within [least, most] (a bound of "above" excludes
// least itself), a flag read by the command that was run, and given together with the flag it only
// means something with. Values are whole numbers for integer flags and finite for doubles (RunTool
// checks that for every flag, before gflags reads them). A default that is not given is never checked.
struct FlagRule {
  std::string name;
  double least = -std::numeric_limits<double>::infinity();
  double most = std::numeric_limits<double>::infinity();
  bool above = false;                 // the value must be more than least, not equal to it
  std::vector<std::string> commands;  // the commands that read it; empty: every command
  std::string needs;                  // a flag that must also be given ("plan_only" for max_memory)
  // Caffe's own flags: Caffe ignored them where a command does not read them, and scripts written for
  // Caffe may pass them so; given there, they draw a warning instead of an error.
  bool caffe = false;
};
// Throws an Error for the first given flag that breaks its rule (`command`: the command being run, for
// rules that name commands). A flag without a rule is not checked.
void CheckFlags(const std::vector<FlagRule>& rules, const std::string& command = "");
// True when the user gave the flag on the command line (even at its default value).
bool FlagGiven(const std::string& name);

// A size such as 80G, 80GB, 76Gi, 1.5T or 8000000000 (K, M, G, T are powers of 1000, Ki, Mi, Gi, Ti of
// 1024; a trailing B is optional) in bytes; `flag` names it in the Error for anything else, for a size
// under one byte and for one past 2^63 bytes.
uint64_t BytesFromText(const std::string& text, const std::string& flag);

// Throws unless `output` names a file other than each of `inputs` (the same path, or the same file by
// another path or a link): a tool never writes its result over what it reads.
void RequireOutputIsNotAnInput(const std::string& output, const std::vector<std::string>& inputs);

// Prints a user's mistake as RunTool does, "<tool>: error: <message>" on stderr (flushed), for a tool
// that must do more than return 1 afterwards (a rank of mpirun's ends every rank).
void PrintToolError(const std::string& message);

// The device of a tool's --gpu: for gpu >= 0, that GPU ("Use GPU with device ID N", Caffe's line) where
// the machine has a GPU, else the CPU, logging why ("--gpu=<flag_text> but no GPU was found; running
// on the CPU"); for gpu < 0, the CPU. The id itself is checked where the GPU's context is made.
std::pair<Device, int> DeviceForGpuFlag(int gpu, const std::string& flag_text);

}  // namespace cortado
