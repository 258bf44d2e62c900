// cpu_engine_choice.cpp — timing a CPU layer shape's engines, and remembering the winner (see the
// header).
#include "cpu_engine_choice.hpp"

#include <fcntl.h>
#include <glog/logging.h>
#include <omp.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "cortado/blob.hpp"
#include "cortado/cpu_engine.hpp"
#include "cortado/error.hpp"

namespace cortado {

namespace {

// What the timing depends on besides the shape: the CPU, oneDNN's code for it and the threads. No
// spaces: it is the first field of a line of the file.
std::string MachineKey() {
  std::string key = CpuModel() + "|" + OneDnnInstructionSet() + "|" + std::to_string(omp_get_max_threads()) + "t";
  for (char& c : key)
    if (c == ' ') c = '_';
  return key;
}

// The file of earlier processes' choices: $CORTADO_CACHE_DIR, else $XDG_CACHE_HOME/cortado, else
// ~/.cache/cortado; "" when none of these is set.
std::string ChoicesFile() {
  std::filesystem::path dir;
  if (const char* d = std::getenv("CORTADO_CACHE_DIR"); d && *d) {
    dir = d;
  } else if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) {
    dir = std::filesystem::path(x) / "cortado";
  } else if (const char* h = std::getenv("HOME"); h && *h) {
    dir = std::filesystem::path(h) / ".cache" / "cortado";
  } else {
    return "";
  }
  return (dir / "cpu_engines.txt").string();
}

// The index of the candidate a line of the file records for (machine, shape), if any. Lines are
// "<machine> <shape> <engine>"; a line cut short (a process killed while writing) is skipped, and so is
// one naming an engine this build has no candidate of.
bool FindChoice(std::istream& in, const std::string& machine, const std::string& shape,
                const std::vector<EngineCandidate>& candidates, int* index) {
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string m, s, e;
    if (!(fields >> m >> s >> e) || m != machine || s != shape) continue;
    for (size_t i = 0; i < candidates.size(); ++i)
      if (candidates[i].name == e) return *index = static_cast<int>(i), true;
  }
  return false;
}

// The file, opened and locked for as long as this lives (no file: not open).
class LockedChoices {
 public:
  explicit LockedChoices(const std::string& path) {
    if (path.empty()) return;
    std::error_code error;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), error);
    fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ >= 0 && flock(fd_, LOCK_EX) != 0) Close();
  }
  ~LockedChoices() { Close(); }
  bool is_open() const { return fd_ >= 0; }
  bool Find(const std::string& machine, const std::string& shape, const std::vector<EngineCandidate>& candidates,
            int* index) const {
    std::ifstream in("/proc/self/fd/" + std::to_string(fd_));
    return FindChoice(in, machine, shape, candidates, index);
  }
  void Append(const std::string& line) const {
    if (write(fd_, line.data(), line.size()) != static_cast<ssize_t>(line.size()))
      LOG(WARNING) << "could not record a CPU engine choice: " << std::strerror(errno);
  }

 private:
  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }
  int fd_ = -1;
};

}  // namespace

EngineRule CpuEngineRule(bool prototxt_caffe, bool prototxt_onednn, bool plan_only) {
  const CpuEngine setting = CpuEngineSetting();
  if (prototxt_caffe || !BuiltWithOneDnn() || (!prototxt_onednn && setting == CpuEngine::kIm2col))
    return EngineRule::kOwn;
  return !prototxt_onednn && setting == CpuEngine::kAuto && !plan_only ? EngineRule::kTimed : EngineRule::kOneDnn;
}

void RequireOneDnnWhereAsked(bool prototxt_onednn, const std::string& who) {
  CORTADO_REQUIRE(!prototxt_onednn || BuiltWithOneDnn(), who,
                  ": engine ONEDNN, but this build has no oneDNN (install libdnnl-dev and rebuild); use engine: "
                  "CAFFE (or DEFAULT)");
}

int FloatsFor(size_t bytes) { return static_cast<int>((bytes + sizeof(float) - 1) / sizeof(float)); }

void FitOneDnnBuffers(const std::string& who, bool planned, size_t scratch_bytes, Blob& scratch,
                      size_t workspace_bytes, Blob* keeper, int keeper_floats) {
  const auto fits = [](size_t bytes, const Blob& blob) { return bytes <= static_cast<size_t>(blob.capacity()) * sizeof(float); };
  if (planned)
    CORTADO_REQUIRE(fits(scratch_bytes, scratch) && (!keeper || fits(workspace_bytes, *keeper)), who,
                    ": oneDNN needs more memory for the new shape than was planned at set-up; give the layer "
                    "engine: CAFFE");
  scratch.Reshape(std::vector<int>{FloatsFor(scratch_bytes)});
  if (keeper) keeper->Reshape(std::vector<int>{std::max(keeper_floats, FloatsFor(workspace_bytes))});
}

int ChooseEngineByTiming(const std::string& shape, const std::string& who, const std::vector<EngineCandidate>& candidates) {
  static std::mutex mutex;
  static std::map<std::string, std::string> chosen;  // this process's engine names, by machine and shape
  std::lock_guard<std::mutex> lock(mutex);
  const std::string machine = MachineKey(), both = machine + " " + shape;
  const auto index_of = [&candidates](const std::string& name) {
    for (size_t i = 0; i < candidates.size(); ++i)
      if (candidates[i].name == name) return static_cast<int>(i);
    return 0;
  };
  if (auto it = chosen.find(both); it != chosen.end()) return index_of(it->second);
  int best = 0;
  const std::string path = ChoicesFile();
  {
    const LockedChoices file(path);
    if (file.is_open() && file.Find(machine, shape, candidates, &best)) {
      VLOG(1) << who << ": " << candidates[best].name << ", as timed before (" << path << ")";
      chosen[both] = candidates[best].name;
      return best;
    }
  }
  // Timed without holding the file, so that other processes are not kept waiting.
  std::ostringstream times;
  double best_ms = -1;
  for (size_t i = 0; i < candidates.size(); ++i) {
    std::string why;
    const double ms = candidates[i].time(&why);
    times << (i ? ", " : "") << candidates[i].name;
    if (ms < 0) {
      times << " unavailable (" << why << ")";
      continue;
    }
    times << " " << ms << " ms";
    if (best_ms < 0 || ms < best_ms) best = static_cast<int>(i), best_ms = ms;
  }
  // Another process may have timed the same shape meanwhile: the first choice recorded stands, so that
  // every run on this machine computes alike (a resumed run as the run it continues).
  const LockedChoices file(path);
  if (file.is_open() && !file.Find(machine, shape, candidates, &best))
    file.Append(both + " " + candidates[best].name + "\n");
  VLOG(1) << who << ": forward + backward " << times.str() << ": " << candidates[best].name;
  chosen[both] = candidates[best].name;
  return best;
}

double BestMilliseconds(const std::function<void()>& run) {
  using Clock = std::chrono::steady_clock;
  const auto time = [&run] {
    const Clock::time_point start = Clock::now();
    run();
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  };
  time();  // not counted: caches, page faults, oneDNN's code generation
  double best = time();
  // Slow shapes get one more run, fast ones several: at most about 100 ms more per candidate.
  const int more = best > 50 ? 1 : best > 10 ? 2 : 4;
  for (int i = 0; i < more; ++i) best = std::min(best, time());
  return best;
}

void FillForTiming(std::vector<float>* values) {
  for (size_t i = 0; i < values->size(); ++i) (*values)[i] = 0.01f * static_cast<float>(static_cast<int>(i % 199) - 99);
}

}  // namespace cortado
