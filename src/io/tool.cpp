// tool.cpp — shared start-up and error handling for the command-line tools: flag checking, --help,
// logging set-up, and one line plus exit 1 for a user's mistake.
#include "cortado/tool.hpp"

#include <gflags/gflags.h>
#include <glog/logging.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include "cortado/error.hpp"
#include "cortado/gpu.hpp"  // GpuCount, BuiltWithCuda
#include "cortado/suggest.hpp"

namespace cortado {

namespace {

// The flags the tool defines itself (in its source under tools/), not glog's or gflags' own.
std::vector<gflags::CommandLineFlagInfo> OwnFlags() {
  std::vector<gflags::CommandLineFlagInfo> all, own;
  gflags::GetAllFlags(&all);
  for (const auto& flag : all)
    if (flag.filename.find("tools/") != std::string::npos) own.push_back(flag);
  return own;
}

bool IsHelp(const char* arg) {
  return !std::strcmp(arg, "--help") || !std::strcmp(arg, "-help") || !std::strcmp(arg, "-h");
}

void PrintHelp(const char* usage) {
  std::printf("%s\nflags:\n", usage);
  for (const auto& flag : OwnFlags()) {
    std::string value = flag.type == "string" ? "\"" + flag.default_value + "\"" : flag.default_value;
    std::printf("  --%-16s %s (default: %s)\n", flag.name.c_str(), flag.description.c_str(), value.c_str());
  }
  std::printf("  --%-16s %s\n", "help", "print this and exit");
}

// Every "-name", "--name" or "--name=value" must be a flag gflags knows (the tool's, glog's such as
// --v, or gflags' own such as --flagfile); "--nofoo" negates a boolean. Throws for any other name,
// listing the tool's flags and the closest one.
void CheckFlagNames(int argc, char** argv) {
  bool value_follows = false;  // "--solver x.prototxt": x.prototxt is the value, not a flag
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (value_follows) {
      value_follows = false;
      continue;
    }
    if (arg == "--") break;
    if (arg.size() < 2 || arg[0] != '-') continue;
    const std::string body = arg.substr(arg[1] == '-' ? 2 : 1);
    const size_t eq = body.find('=');
    const std::string name = body.substr(0, eq);
    gflags::CommandLineFlagInfo info;
    if (gflags::GetCommandLineFlagInfo(name.c_str(), &info)) {
      value_follows = eq == std::string::npos && info.type != "bool";
      continue;
    }
    if (name.rfind("no", 0) == 0 && gflags::GetCommandLineFlagInfo(name.substr(2).c_str(), &info) &&
        info.type == "bool")
      continue;
    std::vector<std::string> names;
    std::string listed;
    for (const auto& flag : OwnFlags()) {
      names.push_back(flag.name);
      listed += (listed.empty() ? "--" : ", --") + flag.name;
    }
    const std::string closest = ClosestMatch(name, names);
    Fail("unknown flag ", arg.substr(0, arg.find('=')), " (valid flags: ", listed, ")",
         closest.empty() ? "" : "; did you mean --" + closest + "?");
  }
}

std::string g_tool_name = "cortado";  // set by RunTool from argv[0]

}  // namespace

void PrintToolError(const std::string& message) {
  std::fprintf(stderr, "%s: error: %s\n", g_tool_name.c_str(), message.c_str());
  std::fflush(stderr);
}

int RunTool(int argc, char** argv, const char* usage, const std::function<int(int, char**)>& body) {
  g_tool_name = std::filesystem::path(argv[0]).filename().string();
  gflags::SetUsageMessage(usage);
  gflags::SetVersionString("1.0");
  FLAGS_logtostderr = true;
  FLAGS_colorlogtostderr = false;
  FLAGS_log_year_in_prefix = false;  // Caffe's prefix, which log-parsing scripts expect
  try {
    for (int i = 1; i < argc; ++i) {
      if (!std::strcmp(argv[i], "--")) break;
      if (IsHelp(argv[i])) {
        PrintHelp(usage);
        return 0;
      }
    }
    CheckFlagNames(argc, argv);
    gflags::ParseCommandLineFlags(&argc, &argv, true);
    google::InitGoogleLogging(argv[0]);
    return body(argc, argv);
  } catch (const std::exception& e) {  // cortado::Error, or any other
    PrintToolError(e.what());
  }
  return 1;
}

std::pair<Device, int> DeviceForGpuFlag(int gpu, const std::string& flag_text) {
  if (gpu < 0) return {Device::kCPU, 0};
  if (GpuCount() == 0) {
    LOG(INFO) << "--gpu=" << flag_text << " but "
              << (BuiltWithCuda() ? "no GPU was found" : "this build has no CUDA support") << "; running on the CPU";
    return {Device::kCPU, 0};
  }
  LOG(INFO) << "Use GPU with device ID " << gpu;
  return {Device::kGPU, gpu};
}

}  // namespace cortado
