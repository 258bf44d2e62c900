// fuzz_util.cpp — the harnesses' shared set-up and helpers (fuzz_util.hpp).
#include "fuzz_util.hpp"

#include <errno.h>  // program_invocation_short_name
#include <fcntl.h>
#include <glog/logging.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "cortado/batch_pipeline.hpp"
#include "cortado/context.hpp"
#include "cortado/error.hpp"
#include "cortado/io.hpp"
#include "cortado/memory.hpp"
#include "cortado/net.hpp"
#include "cortado/solver.hpp"

namespace cortado::fuzz {

namespace fs = std::filesystem;

namespace {

std::string* g_work_dir = nullptr;

void RemoveWorkDir() {
  std::error_code ec;
  if (g_work_dir != nullptr) fs::remove_all(*g_work_dir, ec);
}

// The work directory's path is the same in every run of a harness, /dev/shm/cortado_fuzz_<program>:
// paths under it reach string comparisons that libFuzzer records for its mutations, so random bytes
// in it would make two runs with one seed differ (scripts/fuzz.sh's fixed runs). A lock held for the
// process's life keeps it to one process; a second instance of the same harness works in a
// directory of its own with a random name.
std::string MakeWorkDir() {
  for (const char* base : {"/dev/shm", "/tmp"}) {
    const std::string fixed = std::string(base) + "/cortado_fuzz_" + program_invocation_short_name;
    std::error_code ec;
    fs::create_directories(fixed, ec);
    const int lock = ::open((fixed + "/.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lock >= 0 && ::flock(lock, LOCK_EX | LOCK_NB) == 0) {
      for (const auto& entry : fs::directory_iterator(fixed, ec))  // a crashed run's files
        if (entry.path().filename() != ".lock") fs::remove_all(entry.path(), ec);
      return fixed;  // the lock stays held until the process ends
    }
    if (lock >= 0) ::close(lock);
    std::string pattern = std::string(base) + "/cortado_fuzz_XXXXXX";
    if (::mkdtemp(pattern.data()) != nullptr) return pattern;
  }
  std::abort();  // nowhere to work: not an input's fault, but nothing can run
}

}  // namespace

const std::string& Setup() {
  if (g_work_dir != nullptr) return *g_work_dir;
  FLAGS_logtostderr = true;
  FLAGS_minloglevel = google::GLOG_FATAL;
  google::InitGoogleLogging("fuzz");
  Context::SetCpuThreads(1);
  // Data layers load their batches in this thread, as many as are taken: with threads, how far the
  // prefetching got before a net was destroyed would vary from run to run (fuzz/README.md).
  LoadBatchesInCallerThread(true);
  g_work_dir = new std::string(MakeWorkDir());
  if (::chdir(g_work_dir->c_str()) != 0) std::abort();
  std::atexit(RemoveWorkDir);
  return *g_work_dir;
}

int Run(const std::function<void()>& body) {
  Setup();
  try {
    body();
  } catch (const Error& e) {
    // refused with one clear line: the expected answer to a bad file
    static const bool verbose = std::getenv("CORTADO_FUZZ_VERBOSE") != nullptr;
    if (verbose) std::fprintf(stderr, "refused: %s\n", e.what());
  }
  return 0;
}

std::string WriteInput(const std::string& name, const uint8_t* data, size_t size) {
  return WriteInput(name, std::string(reinterpret_cast<const char*>(data), size));
}

std::string WriteInput(const std::string& name, const std::string& bytes) {
  const std::string path = Setup() + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) std::abort();
  return path;
}

std::string FreshFolder(const std::string& name) {
  const std::string path = Setup() + "/" + name;
  std::error_code ec;
  fs::remove_all(path, ec);
  fs::create_directories(path);
  return path;
}

extern const char kSmallNetText[];  // fuzz/small_net.prototxt, compiled in (small_net_text.cpp.in)

// Written to the work directory: the checkout's path differs from one clone to the next, and the
// net's path reaches error messages and comparisons as the work directory's does (MakeWorkDir).
std::string SmallNetPath() {
  static const std::string* path = new std::string(WriteInput("small_net.prototxt", kSmallNetText));
  return *path;
}

NetParameter SmallNet() {
  static const NetParameter* net = [] {
    auto* parsed = new NetParameter;
    try {
      ReadProtoFromTextFile(SmallNetPath(), parsed);
    } catch (const Error& e) {  // the checkout is broken, not the input
      std::fprintf(stderr, "fuzz: %s\n", e.what());
      std::abort();
    }
    return parsed;
  }();
  return *net;
}

SolverParameter SmallSolver(const std::string& snapshot_prefix) {
  SolverParameter param;
  *param.mutable_net_param() = SmallNet();
  param.set_base_lr(0.01f);
  param.set_momentum(0.9f);
  param.set_lr_policy("fixed");
  param.set_max_iter(1000);
  param.set_random_seed(1);
  param.set_solver_mode(SolverParameter::CPU);
  param.set_snapshot_prefix(snapshot_prefix);
  return param;
}

void LoadIntoSmallNet(const std::string& path) {
  Context ctx(Device::kCPU, 1);
  Net net(SmallNet(), ctx, SmallNetPath());
  net.AllocateOwnArena();
  net.LoadWeightsFile(path);
  net.Forward();
}

size_t PlannedBytes(const NetParameter& param, const std::string& source) {
  Context planning(Device::kCPU, Context::PlanOnly{});
  Net net(param, planning, source);
  MemoryPlan plan;
  net.RequestMemory(plan);
  return plan.bytes();
}

void RestoreAndStep(const std::string& path) {
  static const bool weights_written = [] {  // what the seeds' learned_net names, beside them
    Context ctx(Device::kCPU, 1);
    Net net(SmallNet(), ctx, SmallNetPath());
    net.AllocateOwnArena();
    NetParameter weights;
    net.ToProto(&weights);
    WriteProtoToBinaryFile(weights, Setup() + "/weights.caffemodel");
    return true;
  }();
  (void)weights_written;
  Solver solver(SmallSolver(FreshFolder("snap") + "/s"), "solver.prototxt");
  solver.Restore(path);
  solver.Step(1);
}

void ParseEveryRecord(const RecordSource& records) {
  Datum datum;
  for (uint64_t i = 0; i < records.size() && i < 4096; ++i) {
    const std::string_view value = records.value(i);
    if (datum.ParseFromArray(value.data(), static_cast<int>(value.size()))) datum.Clear();
  }
}

bool SafeToRun(const NetParameter& net) {
  // WindowData reads the images its window file names, wherever they are, and decodes them.
  for (const auto& layer : net.layer())
    if (layer.type() == "HDF5Output" || layer.type() == "WindowData") return false;
  for (const auto& layer : net.layers())  // V1: HDF5_OUTPUT is 10, WINDOW_DATA 24
    if (layer.type() == V1LayerParameter::HDF5_OUTPUT || layer.type() == V1LayerParameter::WINDOW_DATA) return false;
  return true;
}

}  // namespace cortado::fuzz
