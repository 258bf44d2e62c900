// tool.cpp — shared start-up and error handling for the command-line tools: flag checking, --help,
// logging set-up, and one line plus exit 1 for a user's mistake.
#include "cortado/tool.hpp"

#include <gflags/gflags.h>
#include <glog/logging.h>

#include <strings.h>  // strcasecmp

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <iomanip>
#include <limits>
#include <map>
#include <sstream>
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

// Throws unless `value` is something gflags reads as a value of `type` and, for numbers, one that fits
// the type (gflags would end the program with its own message instead). Doubles must be finite.
void CheckFlagValue(const std::string& name, const std::string& type, const std::string& value) {
  const std::string given = "--" + name + "=" + value;
  if (type == "bool") {
    static const char* const kWords[] = {"true", "false", "t", "f", "yes", "no", "y", "n", "1", "0"};
    for (const char* word : kWords)
      if (strcasecmp(value.c_str(), word) == 0) return;
    Fail(given, " is not a truth value (write --", name, "=true or --", name, "=false)");
  }
  if (type == "double") {
    char* end = nullptr;
    errno = 0;
    const double number = value.empty() ? 0 : std::strtod(value.c_str(), &end);
    CORTADO_REQUIRE(!value.empty() && *end == '\0' && !std::isspace(static_cast<unsigned char>(value[0])), given,
                    " is not a number");
    CORTADO_REQUIRE(std::isfinite(number) && errno != ERANGE, given, " is not a finite number");
    return;
  }
  const bool is_unsigned = type == "uint32" || type == "uint64";
  if (type != "int32" && type != "int64" && !is_unsigned) return;  // strings are the tool's to read
  const bool hex = value.size() > 2 && value[0] == '0' && (value[1] == 'x' || value[1] == 'X');
  char* end = nullptr;
  errno = 0;
  const long long number = std::strtoll(value.c_str(), &end, hex ? 16 : 10);
  CORTADO_REQUIRE(!value.empty() && *end == '\0' && !std::isspace(static_cast<unsigned char>(value[0])), given,
                  " is not a whole number");
  const bool wide = type == "int64" || type == "uint64";
  const long long least = is_unsigned ? 0 : wide ? std::numeric_limits<long long>::min() : std::numeric_limits<int32_t>::min();
  const long long most = type == "uint32" ? std::numeric_limits<uint32_t>::max()
                        : wide                ? std::numeric_limits<long long>::max()
                                              : std::numeric_limits<int32_t>::max();
  CORTADO_REQUIRE(errno != ERANGE && number >= least && number <= most && !(is_unsigned && value[0] == '-'), given,
                  " is out of range (", least, " to ", most, ")");
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
      if (eq != std::string::npos) {
        CheckFlagValue(name, info.type, body.substr(eq + 1));
      } else if (value_follows && i + 1 < argc) {
        CheckFlagValue(name, info.type, argv[i + 1]);
      }
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

bool FlagGiven(const std::string& name) {
  gflags::CommandLineFlagInfo info;
  return gflags::GetCommandLineFlagInfo(name.c_str(), &info) && !info.is_default;
}

void CheckFlags(const std::vector<FlagRule>& rules, const std::string& command) {
  for (const FlagRule& rule : rules) {
    gflags::CommandLineFlagInfo info;
    CHECK(gflags::GetCommandLineFlagInfo(rule.name.c_str(), &info)) << "a rule for the unknown flag --" << rule.name;
    if (info.is_default) continue;
    const std::string given = "--" + rule.name + (info.type == "bool" ? "" : "=" + info.current_value);
    if (!rule.commands.empty() &&
        std::find(rule.commands.begin(), rule.commands.end(), command) == rule.commands.end()) {
      std::string readers;
      for (size_t i = 0; i < rule.commands.size(); ++i)
        readers += (i == 0 ? "" : i + 1 == rule.commands.size() ? " and " : ", ") + rule.commands[i];
      if (rule.caffe) {
        LOG(WARNING) << "--" << rule.name << " is read by " << readers << ", not " << command << "; ignored";
        continue;
      }
      Fail("--", rule.name, " is read by ", readers, ", not ", command, "; leave it out");
    }
    if (!rule.needs.empty() && !FlagGiven(rule.needs))
      Fail(given, " only means something with --", rule.needs, "; add --", rule.needs, " or leave it out");
    if (info.type == "bool" || info.type == "string") continue;
    const double value = std::strtod(info.current_value.c_str(), nullptr);
    std::ostringstream range;
    range << std::setprecision(12);
    if (rule.above) {
      range << "more than " << rule.least;
    } else if (std::isfinite(rule.least)) {
      range << "at least " << rule.least;
    }
    if (std::isfinite(rule.most)) range << (range.str().empty() ? "" : " and ") << "at most " << rule.most;
    const bool low = rule.above ? !(value > rule.least) : value < rule.least;
    CORTADO_REQUIRE(!low && !(value > rule.most), given, " is out of range: it must be ", range.str());
  }
}

uint64_t BytesFromText(const std::string& text, const std::string& flag) {
  const std::string given = flag + "=" + text;
  size_t end = 0;
  double value = -1;
  try {
    value = std::stod(text, &end);
  } catch (const std::exception&) {
  }
  std::string unit = text.substr(std::min(end, text.size()));
  if (!unit.empty() && (unit.back() == 'B' || unit.back() == 'b')) unit.pop_back();
  static const std::map<std::string, double> kScale = {
      {"", 1},     {"K", 1e3},      {"M", 1e6},          {"G", 1e9},          {"T", 1e12},
      {"Ki", 1024}, {"Mi", 1048576}, {"Gi", 1073741824.0}, {"Ti", 1099511627776.0}};
  const auto it = kScale.find(unit);
  CORTADO_REQUIRE(std::isfinite(value) && value >= 0 && it != kScale.end() && !std::isspace(text[0]), given,
                  " is not a size (write e.g. 80G, 80GB, 76Gi or 8000000000)");
  const double bytes = value * it->second;
  CORTADO_REQUIRE(bytes >= 1, given, " is less than one byte");
  CORTADO_REQUIRE(bytes <= 9223372036854775807.0, given, " is more than 2^63 bytes, more than any machine has");
  return static_cast<uint64_t>(bytes);
}

void RequireOutputIsNotAnInput(const std::string& output, const std::vector<std::string>& inputs) {
  for (const std::string& input : inputs) {
    std::error_code ec;
    const bool same = output == input || std::filesystem::equivalent(output, input, ec);
    CORTADO_REQUIRE(!same, "the output ", output, " is also an input (", input,
                    "); write the result to another path, so that the input stays as it is");
  }
}

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
