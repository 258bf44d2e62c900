// tool.cpp — shared start-up and error handling for the command-line tools.
#include "cortado/tool.hpp"

#include <gflags/gflags.h>
#include <glog/logging.h>

#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>

#include "cortado/error.hpp"

namespace cortado {


int RunTool(int argc, char** argv, const char* usage, const std::function<int(int, char**)>& body) {
  const std::string name = std::filesystem::path(argv[0]).filename().string();
  gflags::SetUsageMessage(usage);
  gflags::SetVersionString("1.0");
  FLAGS_logtostderr = true;
  FLAGS_colorlogtostderr = false;
  FLAGS_log_year_in_prefix = false;  // Caffe's prefix, which log-parsing scripts expect
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(argv[0]);
  try {
    return body(argc, argv);
  } catch (const Error& e) {
    std::fprintf(stderr, "%s: error: %s\n", name.c_str(), e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", name.c_str(), e.what());
  }
  return 1;
}

}  // namespace cortado
