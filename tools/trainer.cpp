// trainer.cpp — the command line, in Caffe's shape:
//   trainer train --solver=S [--weights=a.caffemodel[,b...] | --snapshot=X.solverstate] [--gpu=N]
//   trainer train ... --gpu=0,1,2,3: one rank per GPU, a thread each (data parallel, parallel.hpp)
//   mpirun -np N [-H host1,host2] trainer train ...: one rank per process, on its local GPU or the CPU
//   trainer test --model=M --weights=W [--iterations=50] [--gpu=N]
//   trainer time --model=M [--iterations=50] [--phase=TRAIN|TEST] [--gpu=N] [--batch_size=B]
//                [--output=times.csv|times.json]
//   trainer train|time ... --plan_only [--max_memory=80G]: the memory plan, allocating nothing
//   trainer device_query [--gpu=N]: the CPU (instruction sets, BLAS kernels, oneDNN) and the GPUs
//   any command ... [--cpu_engine=auto|onednn|im2col] [--threads=N]: how the CPU computes (cpu_engine.hpp)
//   trainer upgrade --model=OLD.prototxt|OLD.caffemodel --output=NEW
// A user's mistake ends with one line on stderr and exit code 1 (see tool.hpp).
#include <fcntl.h>
#include <gflags/gflags.h>
#include <unistd.h>
#include <glog/logging.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <iomanip>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cortado/batch_size.hpp"
#include "cortado/cpu_engine.hpp"
#include "cortado/error.hpp"
#include "cortado/gpu.hpp"
#include "cortado/io.hpp"
#include "cortado/parallel.hpp"
#include "cortado/solver.hpp"
#include "cortado/time_report.hpp"
#include "cortado/tool.hpp"
#include "cortado/upgrade.hpp"

DEFINE_string(solver, "", "The solver prototxt (train)");
DEFINE_string(model, "", "The net prototxt (test, time), or the net to upgrade (upgrade: a prototxt or .caffemodel)");
DEFINE_string(output, "", "upgrade: where to write the upgraded net (binary when --model is a .caffemodel); time: "
              "also write the per-layer and total times to this .csv or .json file");
DEFINE_string(weights, "", "Comma-separated .caffemodel files: fine-tune from them (train) or test them (test)");
DEFINE_string(snapshot, "", "A .solverstate to resume training from");
DEFINE_int32(iterations, 50, "Iterations to run (test, time)");
DEFINE_string(phase, "TRAIN", "Net phase for time: TRAIN or TEST");
DEFINE_int32(level, 0, "Net state level, for include/exclude rules");
DEFINE_string(stage, "", "Comma-separated net state stages, for include/exclude rules");
DEFINE_string(gpu, "", "The GPU to run on (train, test, time), overriding the solver's solver_mode and "
              "device_id. train: a list such as 0,1 or 'all' trains data-parallel, one thread per GPU (under "
              "mpirun: rank r uses its local rank's entry); test and time use the first. Without a GPU, runs on "
              "the CPU. device_query: the GPUs to describe (default 0)");
DEFINE_string(cpu_engine, "", "CPU: the engine of convolutions and matrix products: auto (time each convolution "
              "shape at set-up and keep the fastest), onednn or im2col (no oneDNN); default CORTADO_CPU_ENGINE, "
              "else auto");
DEFINE_int32(threads, 0, "CPU: the threads of all parallel work (oneDNN, BLAS, Cortado's loops); default "
             "OMP_NUM_THREADS, else the machine's cores");
DEFINE_double(exchange_bucket_mb, 0, "Data-parallel training: average the gradients in buckets of about this many "
              "MiB (as the solver field exchange_bucket_mb, default 4)");
DEFINE_bool(cuda_graph, true, "GPU training: capture each step as CUDA graphs after a warm-up iteration and "
            "replay them (false: queue every step layer by layer)");
DEFINE_bool(strict_fp32, false, "GPU: strict FP32, no TF32 tensor cores (as the solver field strict_fp32; by "
            "default convolutions and inner products use TF32 on GPUs of compute capability 8.0 and newer)");
DEFINE_bool(deterministic, false, "GPU: cuDNN algorithms that give the same bits every run, where one fits (as the "
            "solver field deterministic)");
DEFINE_int32(cudnn_workspace_limit_mb, -1, "GPU: the most workspace one cuDNN convolution may use, in MiB (as the "
             "solver field cudnn_workspace_limit_mb, default 1024)");
DEFINE_bool(memory_reuse, true, "Let buffers whose lifetimes do not overlap share memory (as the solver and net "
            "field memory_reuse); --memory_reuse=false gives each its own, for debugging");
DEFINE_bool(metrics, true, "train: write <snapshot prefix>_metrics.jsonl beside the snapshots, one JSON object per "
            "display and test (--metrics=false: as the solver field write_metrics: false)");
DEFINE_bool(plan_only, false, "train, time: print the memory plan of the nets (on --gpu's device, which need not be "
            "present) and exit without allocating or running anything");
DEFINE_string(max_memory, "", "With --plan_only: also find the largest batch whose plan fits in this many bytes "
              "(suffixes K, M, G, T are powers of 1000, Ki, Mi, Gi, Ti of 1024; e.g. 80G)");
DEFINE_int32(batch_size, 0, "train, test, time: the batch of every data and input layer, instead of the prototxt's");
DEFINE_string(sigint_effect, "stop", "On SIGINT or SIGTERM during training: stop (snapshot and exit), snapshot, or none");
DEFINE_string(sighup_effect, "snapshot", "On SIGHUP during training: snapshot, stop, or none");

namespace {

using cortado::Fail;

std::vector<std::string> SplitCommas(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

// The GPU ids --gpu names ("all": every GPU, at least id 0); empty without --gpu.
std::vector<int> GpuIdsFromFlag() {
  std::vector<int> ids;
  if (FLAGS_gpu.empty()) return ids;
  if (FLAGS_gpu == "all") {
    for (int id = 0; id < std::max(cortado::GpuCount(), 1); ++id) ids.push_back(id);
    return ids;
  }
  for (const auto& part : SplitCommas(FLAGS_gpu)) {
    char* end = nullptr;
    const long id = std::strtol(part.c_str(), &end, 10);
    CORTADO_REQUIRE(*end == '\0' && id >= 0 && id < 1024, "--gpu=", FLAGS_gpu,
                    " is not valid (give a GPU id such as 0, a list such as 0,1, or all)");
    ids.push_back(static_cast<int>(id));
  }
  CORTADO_REQUIRE(!ids.empty(), "--gpu=", FLAGS_gpu,
                  " names no GPU (give an id such as 0, a list such as 0,1, or all)");
  return ids;
}

// The GPU test and time use: the first --gpu id (-1 without --gpu).
int GpuFromFlag() {
  const std::vector<int> ids = GpuIdsFromFlag();
  if (ids.empty()) return -1;
  if (ids.size() > 1 && cortado::GpuCount() > 0)
    LOG(WARNING) << "--gpu=" << FLAGS_gpu << ": test and time run on one GPU; using GPU " << ids[0];
  return ids[0];
}

// A net output's values on the host (a GPU's after its queued work, through a copy).
std::vector<float> HostValues(cortado::Context& ctx, const cortado::Blob& blob) {
  if (blob.device() == cortado::Device::kGPU) {
    ctx.Synchronize();
    return blob.ReadData();
  }
  return std::vector<float>(blob.data(), blob.data() + blob.count());
}

// The GPU settings: the solver's fields (train) or the defaults (test, time), with the flags that
// were given on top.
void ApplyGpuFlags(cortado::SolverParameter* param) {
  if (FLAGS_strict_fp32) param->set_strict_fp32(true);
  if (FLAGS_deterministic) param->set_deterministic(true);
  if (FLAGS_cudnn_workspace_limit_mb >= 0) param->set_cudnn_workspace_limit_mb(FLAGS_cudnn_workspace_limit_mb);
}

// test and time: the defaults with the GPU flags applied.
cortado::GpuSettings GpuSettingsFromFlags() {
  cortado::SolverParameter defaults;
  ApplyGpuFlags(&defaults);
  return cortado::GpuSettingsOf(defaults, "the command line");
}

// test and time: a context for --gpu's device (or the CPU), with the GPU flags applied.
std::unique_ptr<cortado::Context> ContextFromFlags() {
  const auto [device, gpu] = cortado::DeviceForGpuFlag(GpuFromFlag(), FLAGS_gpu);  // else the CPU, saying so
  auto ctx = std::make_unique<cortado::Context>(device, -1, gpu);
  if (device == cortado::Device::kGPU) {
    ctx->SetGpuSettings(GpuSettingsFromFlags());
    cortado::LogGpuSettings(*ctx);
  }
  return ctx;
}

// test and time: --batch_size and --memory_reuse applied to the net.
void ApplyNetFlags(cortado::NetParameter* param) {
  if (FLAGS_batch_size > 0) {
    CORTADO_REQUIRE(cortado::SetBatchSize(param, FLAGS_batch_size) > 0, "--batch_size: ", FLAGS_model,
                    " has no data or input layer whose batch could be set");
  }
  if (!FLAGS_memory_reuse) param->set_memory_reuse(false);
}

cortado::NetState StateFromFlags(cortado::Phase phase) {
  cortado::NetState state;
  state.set_phase(phase);
  state.set_level(FLAGS_level);
  for (const auto& stage : SplitCommas(FLAGS_stage)) state.add_stage(stage);
  return state;
}

// ---- memory plans (--plan_only) --------------------------------------------------------------------

// --max_memory's bytes: a number with an optional K/M/G/T (powers of 1000) or Ki/Mi/Gi/Ti (of 1024)
// suffix, and an optional trailing B.
size_t BytesFromFlag(const std::string& text) {
  size_t end = 0;
  double value = -1;
  try {
    value = std::stod(text, &end);
  } catch (const std::exception&) {
  }
  std::string unit = text.substr(std::min(end, text.size()));
  if (!unit.empty() && (unit.back() == 'B' || unit.back() == 'b')) unit.pop_back();
  const std::map<std::string, double> scale = {{"", 1},      {"K", 1e3},  {"M", 1e6},           {"G", 1e9},
                                               {"T", 1e12},  {"Ki", 1024.0}, {"Mi", 1048576.0}, {"Gi", 1073741824.0},
                                               {"Ti", 1099511627776.0}};
  auto it = scale.find(unit);
  CORTADO_REQUIRE(value > 0 && it != scale.end(), "--max_memory=", text,
                  " is not a size (write e.g. 80G, 80GB, 76Gi or 8000000000)");
  return static_cast<size_t>(value * it->second);
}

// Prints the plan at the flags' batch and, with --max_memory, the largest batch that fits.
// plan_at(batch) plans at that batch (0: the prototxt's) and returns the bytes and the summary.
int PrintPlan(const std::function<size_t(int, std::string*)>& plan_at, const std::string& device) {
  const size_t limit = FLAGS_max_memory.empty() ? 0 : BytesFromFlag(FLAGS_max_memory);  // checked first
  std::string summary;
  const size_t bytes = plan_at(FLAGS_batch_size, &summary);
  std::cout << (FLAGS_batch_size > 0 ? "Batch " + std::to_string(FLAGS_batch_size) + ": " : "") << summary << " ("
            << bytes << " bytes in all)" << std::endl;
  if (FLAGS_max_memory.empty()) return 0;
  auto fits = [&](int batch) { return plan_at(batch, nullptr) <= limit; };
  const std::string within = "in " + cortado::FormatBytes(limit) + " on the " + device;
  if (!fits(1)) {
    std::cout << "Not even batch 1 fits " << within << std::endl;
    return 0;
  }
  int low = 1, high = 2;  // fits(low), and high is the next batch to try
  constexpr int kMostBatch = 1 << 20;
  while (high <= kMostBatch && fits(high)) {
    low = high;
    high *= 2;
  }
  if (high > kMostBatch) {
    std::cout << "Every batch up to " << low << " fits " << within << std::endl;
    return 0;
  }
  while (high - low > 1) {  // fits(low), !fits(high)
    const int mid = low + (high - low) / 2;
    (fits(mid) ? low : high) = mid;
  }
  std::cout << "Largest batch that fits " << within << ": " << low << " (planned " << plan_at(low, nullptr)
            << " bytes)" << std::endl;
  return 0;
}

// ---- signals -------------------------------------------------------------------------------------

// The solvers training in this process (one, or one per GPU thread), for the signal handler.
constexpr int kMostSolvers = 64;
std::atomic<cortado::Solver*> g_solvers[kMostSolvers];
std::string g_sigint_effect, g_sighup_effect;

void ApplyEffect(const std::string& effect) {
  for (auto& slot : g_solvers) {
    cortado::Solver* solver = slot.load();
    if (solver == nullptr) continue;
    if (effect == "stop") solver->RequestStop();
    if (effect == "snapshot") solver->RequestSnapshot();
  }
}

// Under mpirun: a stop signal comes from mpirun, which then no longer reads the ranks' output. A rank
// logging into the full pipe would block there until mpirun's SIGKILL, before its snapshot: so its
// stderr stops blocking (later lines may be lost; the snapshot is written).
volatile std::sig_atomic_t g_unblock_stderr_on_stop = 0;

void OnSignal(int signal) {
  const std::string& effect = signal == SIGHUP ? g_sighup_effect : g_sigint_effect;
  if (g_unblock_stderr_on_stop && effect == "stop") {
    const int flags = fcntl(STDERR_FILENO, F_GETFL);
    if (flags >= 0) fcntl(STDERR_FILENO, F_SETFL, flags | O_NONBLOCK);
  }
  ApplyEffect(effect);
}

void CheckEffect(const std::string& flag, const std::string& value) {
  CORTADO_REQUIRE(value == "stop" || value == "snapshot" || value == "none", "--", flag, "=", value,
                  " is not valid (choose stop, snapshot or none)");
}

void InstallSignalHandlers() {
  CheckEffect("sigint_effect", FLAGS_sigint_effect);
  CheckEffect("sighup_effect", FLAGS_sighup_effect);
  g_sigint_effect = FLAGS_sigint_effect;
  g_sighup_effect = FLAGS_sighup_effect;
  struct sigaction action {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGHUP, &action, nullptr);
  // A log reader that went away (a closed pipe; mpirun stops forwarding output when it is told to stop)
  // must not end training before its snapshot: writes to it fail instead.
  signal(SIGPIPE, SIG_IGN);
}

// ---- time's clock --------------------------------------------------------------------------------

// The time points of one forward-backward pass: the host clock on the CPU; on a GPU, CUDA events on
// the compute stream (one per layer and direction, created once), so a layer's time is the GPU's.
class PassClock {
 public:
  PassClock(cortado::Context& ctx, int marks) : times_(marks) {
    if (ctx.device() == cortado::Device::kGPU) gpu_ = std::make_unique<cortado::GpuTimeline>(ctx, marks);
  }
  void Mark(int i) {
    if (gpu_) {
      gpu_->Mark(i);
    } else {
      times_[i] = std::chrono::steady_clock::now();
    }
  }
  void Wait() {
    if (gpu_) gpu_->Wait();
  }
  double Ms(int from, int to) const {
    if (gpu_) return gpu_->Milliseconds(from, to);
    return std::chrono::duration<double, std::milli>(times_[to] - times_[from]).count();
  }

 private:
  std::vector<std::chrono::steady_clock::time_point> times_;
  std::unique_ptr<cortado::GpuTimeline> gpu_;
};

// ---- commands ------------------------------------------------------------------------------------

// Trains one solver (this process's, or one rank's) to the end: fine-tuning from `weights` or resuming
// from --snapshot, with the signal handlers reaching it.
void RunSolver(const cortado::SolverParameter& param, const std::vector<std::string>& weights, cortado::Ranks* ranks) {
  cortado::Solver solver(param, FLAGS_solver, FLAGS_cuda_graph, ranks);
  for (const auto& w : weights) {
    LOG_IF(INFO, solver.is_root()) << "Finetuning from " << w;
    solver.net()->LoadWeightsFile(w);
  }
  const int slot = ranks != nullptr ? ranks->rank() % kMostSolvers : 0;
  g_solvers[slot] = &solver;
  solver.Solve(FLAGS_snapshot);
  g_solvers[slot] = nullptr;
}

// Data parallel: one seed for every rank (rank 0's, drawn when the solver has none), so all build the
// same weights and read the same data order.
void ShareSeed(cortado::SolverParameter* param, cortado::Ranks* ranks) {
  int64_t seed = param->random_seed();
  if (seed < 0 && (ranks == nullptr || ranks->rank() == 0)) seed = std::random_device{}() & 0x7fffffff;
  if (ranks != nullptr) ranks->Broadcast(&seed, sizeof seed, 0);
  param->set_random_seed(seed);
}

// --gpu=0,1,...: one rank per GPU, a thread each, exchanging over NCCL. The first rank to fail ends
// the others (their collectives throw, their NCCL communicators are aborted) and is the one reported.
int TrainGpuThreads(const cortado::SolverParameter& param, const std::vector<std::string>& weights,
                    const std::vector<int>& gpus) {
  const int count = cortado::GpuCount();
  for (size_t i = 0; i < gpus.size(); ++i) {
    CORTADO_REQUIRE(gpus[i] < count, "--gpu: GPU ", gpus[i], " does not exist (this machine has ", count, " GPU",
                    count == 1 ? "" : "s", ")");
    for (size_t j = 0; j < i; ++j)
      CORTADO_REQUIRE(gpus[i] != gpus[j], "--gpu=", FLAGS_gpu, " names GPU ", gpus[i], " twice: NCCL runs one rank "
                      "per GPU");
  }
  CORTADO_REQUIRE(static_cast<int>(gpus.size()) <= kMostSolvers, "--gpu names more than ", kMostSolvers, " GPUs");
  std::string listed;
  for (int id : gpus) listed += (listed.empty() ? "" : ", ") + std::to_string(id);
  LOG(INFO) << "Using GPUs " << listed;  // Caffe's line
  cortado::SolverParameter shared = param;
  ShareSeed(&shared, nullptr);
  const int n = static_cast<int>(gpus.size());
  cortado::ThreadRanksGroup group(n);
  std::mutex failure_mutex;
  std::string failure;  // the first rank's error
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        cortado::SolverParameter own = shared;
        own.set_solver_mode(cortado::SolverParameter::GPU);
        own.set_device_id(gpus[r]);
        std::unique_ptr<cortado::Ranks> rank = group.Rank(r);
        RunSolver(own, weights, rank.get());
      } catch (const std::exception& e) {
        {
          std::lock_guard<std::mutex> lock(failure_mutex);
          if (failure.empty()) failure = (r > 0 ? "rank " + std::to_string(r) + ": " : "") + e.what();
        }
        group.Abort();
        cortado::AbortGpuExchanges();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  if (!failure.empty()) Fail(failure);
  return 0;
}

int Train(cortado::Ranks* ranks) {
  CORTADO_REQUIRE(!FLAGS_solver.empty(), "train needs --solver=SOLVER.prototxt");
  CORTADO_REQUIRE(FLAGS_snapshot.empty() || FLAGS_weights.empty(),
                  "give either --snapshot (resume) or --weights (fine-tune), not both");
  cortado::SolverParameter param = cortado::ReadSolverParameter(FLAGS_solver);
  *param.mutable_train_state() = StateFromFlags(cortado::TRAIN);
  std::vector<std::string> weights = SplitCommas(FLAGS_weights);
  if (weights.empty() && FLAGS_snapshot.empty())
    for (const auto& w : param.weights()) weights.push_back(w);
  for (const auto& w : weights)
    CORTADO_REQUIRE(cortado::FileExists(w), "weights file '", w, "' does not exist");
  CORTADO_REQUIRE(FLAGS_snapshot.empty() || cortado::FileExists(FLAGS_snapshot), "snapshot '",
                  FLAGS_snapshot, "' does not exist");
  const std::vector<int> gpus = GpuIdsFromFlag();
  if (!gpus.empty()) {  // the solver trains on it when there is a GPU, else on the CPU, saying so
    param.set_solver_mode(cortado::SolverParameter::GPU);
    // Under mpirun each rank takes its local rank's entry of the list.
    param.set_device_id(gpus[ranks != nullptr ? ranks->local_rank() % gpus.size() : 0]);
  } else if (ranks != nullptr && param.solver_mode() == cortado::SolverParameter::GPU) {
    param.set_device_id(param.device_id() + ranks->local_rank());  // the ranks of a machine, one GPU each
  }
  ApplyGpuFlags(&param);
  if (!FLAGS_memory_reuse) param.set_memory_reuse(false);
  if (!FLAGS_metrics) param.set_write_metrics(false);
  if (FLAGS_exchange_bucket_mb > 0) param.set_exchange_bucket_mb(static_cast<float>(FLAGS_exchange_bucket_mb));
  if (FLAGS_plan_only) {
    return PrintPlan([&](int batch, std::string* summary) {
      cortado::SolverParameter planned(param);
      if (batch > 0) cortado::SetBatchSize(&planned, batch);
      return cortado::Solver::PlanMemory(planned, FLAGS_solver, summary);
    }, !gpus.empty() ? "GPU" : "CPU");
  }
  if (FLAGS_batch_size > 0) cortado::SetBatchSize(&param, FLAGS_batch_size);
  InstallSignalHandlers();
  if (ranks == nullptr && gpus.size() > 1) {
    if (cortado::GpuCount() > 0) return TrainGpuThreads(param, weights, gpus);
    LOG(INFO) << "--gpu=" << FLAGS_gpu << " but " << (cortado::BuiltWithCuda() ? "no GPU was found" : "this build "
              "has no CUDA support") << "; training in one process on the CPU";
  }
  if (ranks != nullptr) {
    const bool on_cpu = param.solver_mode() == cortado::SolverParameter::CPU || cortado::GpuCount() == 0;
    // Without a thread setting, the machine's cores are shared by its ranks.
    if (on_cpu && std::getenv("OMP_NUM_THREADS") == nullptr && FLAGS_threads == 0) {
      const int cores = static_cast<int>(std::thread::hardware_concurrency());
      cortado::Context::SetCpuThreads(std::max(1, cores / ranks->local_size()));
    }
    ShareSeed(&param, ranks);
  }
  RunSolver(param, weights, ranks);
  return 0;
}

// A rank of mpirun's that failed: its one line, then every rank ends (MPI_Abort), so that none waits
// for it. When all fail alike (a bad prototxt), rank 0's line should be the only one: the others wait a
// moment first, and are usually ended before they print.
[[noreturn]] void FailRank(cortado::Ranks& ranks, const std::string& message) {
  if (ranks.rank() > 0) {
    signal(SIGTERM, SIG_DFL);  // mpirun ends the ranks with SIGTERM: no snapshot from a failed run
    signal(SIGINT, SIG_DFL);
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  }
  cortado::PrintToolError((ranks.rank() > 0 ? "rank " + std::to_string(ranks.rank()) + ": " : "") + message);
  ranks.Abort();
}

// train under mpirun: this process is one rank; rank 0 alone logs (the others only errors).
int TrainAnyWhere() {
  std::unique_ptr<cortado::Ranks> ranks = FLAGS_plan_only ? nullptr : cortado::JoinMpiRanks(nullptr, nullptr);
  if (ranks == nullptr) return Train(nullptr);
  if (ranks->rank() > 0) FLAGS_minloglevel = std::max(FLAGS_minloglevel, int{google::GLOG_ERROR});
  g_unblock_stderr_on_stop = 1;
  try {
    return Train(ranks.get());
  } catch (const std::exception& e) {
    FailRank(*ranks, e.what());
  }
}

int Test() {
  CORTADO_REQUIRE(!FLAGS_model.empty(), "test needs --model=NET.prototxt");
  CORTADO_REQUIRE(!FLAGS_weights.empty(), "test needs --weights=MODEL.caffemodel");
  CORTADO_REQUIRE(FLAGS_iterations > 0, "--iterations must be positive");
  cortado::NetParameter param;
  cortado::ReadProtoFromTextFile(FLAGS_model, &param);
  *param.mutable_state() = StateFromFlags(cortado::TEST);
  ApplyNetFlags(&param);
  const std::unique_ptr<cortado::Context> context = ContextFromFlags();
  cortado::Context& ctx = *context;
  cortado::Net net(param, ctx, FLAGS_model);
  net.AllocateOwnArena();
  for (const auto& w : SplitCommas(FLAGS_weights)) net.LoadWeightsFile(w);
  LOG(INFO) << "Running for " << FLAGS_iterations << " iterations.";
  std::vector<double> scores;
  double loss = 0;
  for (int i = 0; i < FLAGS_iterations; ++i) {
    loss += net.Forward();
    size_t k = 0;
    for (size_t o = 0; o < net.output_blobs().size(); ++o) {
      const std::string& name = net.blob_names()[net.output_blob_indices()[o]];
      for (const float value : HostValues(ctx, *net.output_blobs()[o])) {
        if (scores.size() <= k) scores.push_back(0.0);
        scores[k++] += value;
        LOG(INFO) << "Batch " << i << ", " << name << " = " << value;
      }
    }
  }
  LOG(INFO) << "Loss: " << loss / FLAGS_iterations;
  size_t k = 0;
  for (size_t o = 0; o < net.output_blobs().size(); ++o) {
    const int id = net.output_blob_indices()[o];
    const float weight = net.blob_loss_weights()[id];
    for (int64_t j = 0; j < net.output_blobs()[o]->count(); ++j, ++k) {
      const double mean = scores[k] / FLAGS_iterations;
      std::ostringstream loss_msg;
      if (weight != 0) loss_msg << " (* " << weight << " = " << weight * mean << " loss)";
      LOG(INFO) << net.blob_names()[id] << " = " << mean << loss_msg.str();
    }
  }
  return 0;
}

// time --output: a .csv or .json file in a directory that exists (checked before the benchmark runs).
void CheckTimeOutput(const std::string& path) {
  CORTADO_REQUIRE(cortado::IsTimeReportPath(path), "--output=", path, ": time writes a .csv or a .json file");
  const std::string dir = std::filesystem::path(path).parent_path().string();
  CORTADO_REQUIRE(dir.empty() || std::filesystem::is_directory(dir), "--output=", path, ": directory '", dir,
                  "' does not exist");
}

// The batch of a net: axis 0 of its first layer's first top (a data or input layer's), or 0.
int BatchOf(const cortado::Net& net) {
  for (const auto& tops : net.top_vecs())
    if (!tops.empty() && tops[0]->num_axes() > 0) return tops[0]->shape(0);
  return 0;
}

int Time() {
  CORTADO_REQUIRE(!FLAGS_model.empty(), "time needs --model=NET.prototxt");
  CORTADO_REQUIRE(FLAGS_iterations > 0, "--iterations must be positive");
  cortado::Phase phase;
  CORTADO_REQUIRE(cortado::Phase_Parse(FLAGS_phase, &phase), "--phase=", FLAGS_phase,
                  " is not valid (choose TRAIN or TEST)");
  if (!FLAGS_output.empty()) CheckTimeOutput(FLAGS_output);
  cortado::NetParameter param;
  cortado::ReadProtoFromTextFile(FLAGS_model, &param);
  *param.mutable_state() = StateFromFlags(phase);
  ApplyNetFlags(&param);
  if (FLAGS_plan_only) {
    const bool gpu = GpuFromFlag() >= 0;
    const cortado::GpuSettings settings = GpuSettingsFromFlags();
    return PrintPlan([&](int batch, std::string* summary) {
      cortado::NetParameter planned(param);
      if (batch > 0) cortado::SetBatchSize(&planned, batch);
      cortado::Context ctx(gpu ? cortado::Device::kGPU : cortado::Device::kCPU, cortado::Context::PlanOnly{});
      ctx.SetGpuSettings(settings);
      cortado::Net net(planned, ctx, FLAGS_model);
      cortado::MemoryPlan plan(ctx.device());
      net.RequestMemory(plan);
      if (summary) *summary = plan.Summary();
      return plan.bytes();
    }, gpu ? "GPU" : "CPU");
  }
  const std::unique_ptr<cortado::Context> context = ContextFromFlags();
  cortado::Context& ctx = *context;
  cortado::Net net(param, ctx, FLAGS_model);
  net.AllocateOwnArena();
  const bool backward = phase == cortado::TRAIN;
  LOG(INFO) << "Performing Forward";
  LOG(INFO) << "Initial loss: " << net.Forward();
  if (backward) {
    LOG(INFO) << "Performing Backward";
    net.Backward();
  }
  using Clock = std::chrono::steady_clock;
  auto ms_since = [](Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
  };
  const auto& layers = net.layers();
  const int n = static_cast<int>(layers.size());
  // Marks of one pass: 0 before the first layer, i + 1 after forward of layer i; n + 1 before backward,
  // n + 1 + (n − i) after backward of layer i.
  PassClock clock(ctx, 2 * n + 2);
  std::vector<double> forward_ms(layers.size(), 0.0), backward_ms(layers.size(), 0.0);
  double forward_total = 0, backward_total = 0;
  LOG(INFO) << "*** Benchmark begins ***";
  LOG(INFO) << "Testing for " << FLAGS_iterations << " iterations.";
  const auto start = Clock::now();
  for (int it = 0; it < FLAGS_iterations; ++it) {
    clock.Mark(0);
    for (int i = 0; i < n; ++i) {
      layers[i]->Forward(net.bottom_vecs()[i], net.top_vecs()[i]);
      clock.Mark(i + 1);
    }
    clock.Mark(n + 1);
    if (backward) {
      for (int i = n - 1; i >= 0; --i) {
        if (net.layer_need_backward()[i])
          layers[i]->Backward(net.top_vecs()[i], net.bottom_need_backward()[i], net.bottom_vecs()[i]);
        clock.Mark(2 * n + 1 - i);
      }
    } else {
      for (int i = n - 1; i >= 0; --i) clock.Mark(2 * n + 1 - i);
    }
    clock.Wait();
    for (int i = 0; i < n; ++i) {
      forward_ms[i] += clock.Ms(i, i + 1);
      if (backward) backward_ms[i] += clock.Ms(2 * n - i, 2 * n + 1 - i);
    }
    forward_total += clock.Ms(0, n);
    if (backward) backward_total += clock.Ms(n + 1, 2 * n + 1);
    LOG(INFO) << "Iteration: " << it + 1 << " forward-backward time: " << clock.Ms(0, 2 * n + 1) << " ms.";
  }
  const double total = ms_since(start);
  LOG(INFO) << "Average time per layer: ";
  for (size_t i = 0; i < layers.size(); ++i) {
    LOG(INFO) << std::setfill(' ') << std::setw(10) << net.layer_names()[i]
              << "\tforward: " << forward_ms[i] / FLAGS_iterations << " ms.";
    LOG(INFO) << std::setfill(' ') << std::setw(10) << net.layer_names()[i]
              << "\tbackward: " << backward_ms[i] / FLAGS_iterations << " ms.";
  }
  LOG(INFO) << "Average Forward pass: " << forward_total / FLAGS_iterations << " ms.";
  LOG(INFO) << "Average Backward pass: " << backward_total / FLAGS_iterations << " ms.";
  LOG(INFO) << "Average Forward-Backward: " << total / FLAGS_iterations << " ms.";
  LOG(INFO) << "Total Time: " << total << " ms.";
  LOG(INFO) << "*** Benchmark ends ***";
  if (FLAGS_output.empty()) return 0;
  cortado::TimeReport report;
  report.model = FLAGS_model;
  report.phase = FLAGS_phase;
  report.device = ctx.device() == cortado::Device::kGPU ? "GPU " + std::to_string(ctx.gpu_id()) : "CPU";
  report.threads = cortado::Context::CpuThreads();
  report.batch_size = BatchOf(net);
  report.iterations = FLAGS_iterations;
  for (size_t i = 0; i < layers.size(); ++i)
    report.layers.push_back({net.layer_names()[i], layers[i]->type(), forward_ms[i] / FLAGS_iterations,
                             backward_ms[i] / FLAGS_iterations});
  report.forward_ms = forward_total / FLAGS_iterations;
  report.backward_ms = backward_total / FLAGS_iterations;
  report.forward_backward_ms = total / FLAGS_iterations;
  report.total_ms = total;
  cortado::WriteTimeReport(report, FLAGS_output);
  LOG(INFO) << "Wrote the times to " << FLAGS_output;
  return 0;
}

// The CPU: its instruction sets, the BLAS kernels in use, oneDNN's code and the engine setting.
void LogCpu() {
  LOG(INFO) << "CPU: " << cortado::CpuModel();
  LOG(INFO) << "CPU instruction sets: " << cortado::CpuInstructionSets();
  LOG(INFO) << "BLAS: " << cortado::BlasKernels();
  LOG(INFO) << "oneDNN: " << cortado::OneDnnInstructionSet();
  LOG(INFO) << "CPU engine: " << cortado::CpuEngineName(cortado::CpuEngineSetting()) << ", "
            << cortado::Context::CpuThreads() << " threads";
  cortado::WarnIfBlasKernelsAreSlow();
}

// Describes the CPU, then the GPUs: --gpu's (each checked first, so a bad one is the only line on
// stderr), or GPU 0 when there is one.
int DeviceQuery() {
  const int count = cortado::GpuCount();
  std::vector<int> ids = GpuIdsFromFlag();
  if (!FLAGS_gpu.empty()) {
    if (!cortado::BuiltWithCuda()) Fail("this build of Cortado has no GPU support (rebuild with CUDA)");
    CORTADO_REQUIRE(count > 0, "no GPU found");
    for (int id : ids)
      CORTADO_REQUIRE(id < count, "--gpu: GPU ", id, " does not exist (this machine has ", count, " GPU",
                      count == 1 ? "" : "s", ", ids 0 to ", count - 1, ")");
  }
  LogCpu();
  LOG(INFO) << "GPUs found: " << count << (cortado::BuiltWithCuda() ? "" : " (this build has no GPU support)");
  if (ids.empty() && count > 0) ids.push_back(0);
  for (int id : ids) {
    LOG(INFO) << "Querying GPUs " << id;
    std::istringstream lines(cortado::GpuProperties(id));
    for (std::string line; std::getline(lines, line);) LOG(INFO) << line;
  }
  return 0;
}

// Writes --model in the current format: Caffe's V0/V1 layers and other deprecated fields upgraded
// (a .caffemodel in and out in binary, anything else as prototxt text).
int Upgrade() {
  CORTADO_REQUIRE(!FLAGS_model.empty() && !FLAGS_output.empty(),
                  "upgrade needs --model=OLD.prototxt (or .caffemodel) and --output=NEW");
  const auto ends_with = [](const std::string& s, const std::string& end) {
    return s.size() >= end.size() && s.compare(s.size() - end.size(), end.size(), end) == 0;
  };
  CORTADO_REQUIRE(!ends_with(FLAGS_model, ".h5"), FLAGS_model, ": HDF5 weights are always in the current "
                  "format; upgrade reads a prototxt or a binary .caffemodel");
  const bool binary = ends_with(FLAGS_model, ".caffemodel");
  cortado::NetParameter param;
  if (binary) {
    cortado::ReadProtoFromBinaryFile(FLAGS_model, &param);
  } else {
    cortado::ReadProtoFromTextFile(FLAGS_model, &param);
  }
  if (cortado::NetNeedsUpgrade(param)) {
    cortado::UpgradeNet(&param, FLAGS_model);
  } else {
    LOG(INFO) << "File already in latest proto format: " << FLAGS_model;
  }
  if (binary) {
    cortado::WriteProtoToBinaryFile(param, FLAGS_output);
  } else {
    cortado::WriteProtoToTextFile(param, FLAGS_output);
  }
  LOG(INFO) << "Wrote upgraded NetParameter " << (binary ? "binary" : "text") << " proto to " << FLAGS_output;
  return 0;
}

const char* kUsage =
    "trainer: trains, tests and times nets written in Caffe's prototxt format\n"
    "usage: trainer <command> <args>\n\n"
    "commands:\n"
    "  train           train or finetune a model\n"
    "  test            score a model\n"
    "  time            benchmark model execution time\n"
    "  device_query    show the CPU's instruction sets and BLAS kernels, and GPU diagnostic information\n"
    "  upgrade         rewrite a net (--model) in the current format (--output)\n";

}  // namespace

int main(int argc, char** argv) {
  return cortado::RunTool(argc, argv, kUsage, [&](int argc, char** argv) {
    const std::map<std::string, int (*)()> commands = {
        {"train", TrainAnyWhere}, {"test", Test}, {"time", Time}, {"device_query", DeviceQuery}, {"upgrade", Upgrade}};
    CORTADO_REQUIRE(argc >= 2, "no command given (valid commands: train, test, time, device_query, upgrade; "
                    "see trainer --help)");
    CORTADO_REQUIRE(argc == 2, "unexpected argument '", argv[2], "' (flags are written --name=value; "
                    "see trainer --help)");
    auto it = commands.find(argv[1]);
    if (it == commands.end())
      Fail("unknown command '", argv[1], "' (valid commands: train, test, time, device_query, upgrade)");
    cortado::CpuEngineSetting();  // a bad CORTADO_CPU_ENGINE is an error here, before anything runs
    if (!FLAGS_cpu_engine.empty()) cortado::SetCpuEngine(cortado::ParseCpuEngine(FLAGS_cpu_engine, "--cpu_engine"));
    CORTADO_REQUIRE(FLAGS_threads >= 0, "--threads=", FLAGS_threads, ": must be 0 (OMP_NUM_THREADS or the cores) or more");
    cortado::Context::SetCpuThreads(FLAGS_threads);
    return it->second();
  });
}
