// train.cpp — trainer train: reads --solver, applies the flags, and trains one solver, one rank under
// mpirun, or one rank per GPU thread (--gpu=0,1,...); SIGINT, SIGTERM and SIGHUP stop the solvers or
// have them snapshot (--sigint_effect, --sighup_effect).
#include <fcntl.h>
#include <glog/logging.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cortado/batch_size.hpp"
#include "cortado/error.hpp"
#include "cortado/gpu.hpp"
#include "cortado/io.hpp"
#include "cortado/parallel.hpp"
#include "cortado/solver.hpp"
#include "cortado/tool.hpp"
#include "trainer.hpp"

namespace trainer {

namespace {

using cortado::Fail;

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

// ---- training ------------------------------------------------------------------------------------

// Trains one solver (this process's, or one rank's) to the end: fine-tuning from `weights` or resuming
// from --snapshot, with the signal handlers reaching it.
void RunSolver(const cortado::SolverParameter& param, const std::vector<std::string>& weights, cortado::Ranks* ranks) {
  cortado::Solver solver(param, FLAGS_solver, FLAGS_cuda_graph, ranks);
  solver.WriteResolvedAtFirstSnapshot();
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

// The first Python layer of the solver's nets ("" when none).
std::string FirstPythonLayer(cortado::SolverParameter param) {
  cortado::InlineNetFiles(&param);
  std::vector<const cortado::NetParameter*> nets(param.test_net_param().pointer_begin(),
                                                 param.test_net_param().pointer_end());
  nets.push_back(&param.net_param());
  nets.push_back(&param.train_net_param());
  for (const cortado::NetParameter* net : nets)
    for (const auto& layer : net->layer())
      if (layer.type() == "Python") return layer.name();
  return "";
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
  param.clear_weights();  // what this run fine-tunes from, as the resolved solver records it
  for (const auto& w : weights) param.add_weights(w);
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
  if (!FLAGS_fuse) param.set_fuse(false);
  if (!FLAGS_precision.empty()) param.set_precision(PrecisionFromFlag());
  if (!FLAGS_layout.empty()) param.set_layout(LayoutFromFlag());
  if (!FLAGS_metrics) param.set_write_metrics(false);
  if (FLAGS_exchange_bucket_mb > 0) param.set_exchange_bucket_mb(static_cast<float>(FLAGS_exchange_bucket_mb));
  if (FLAGS_plan_only) {
    return PrintPlan([&](int batch, std::string* summary) {
      cortado::SolverParameter planned(param);
      if (batch > 0) cortado::SetBatchSize(&planned, batch);
      return cortado::Solver::PlanMemory(planned, FLAGS_solver, summary);
    }, param.solver_mode() == cortado::SolverParameter::GPU ? "GPU" : "CPU");
  }
  if (FLAGS_batch_size > 0) cortado::SetBatchSize(&param, FLAGS_batch_size);
  InstallSignalHandlers();
  if (ranks == nullptr && gpus.size() > 1) {
    // Refused on every machine, with or without the GPUs, so that a command line means the same anywhere.
    const std::string python = FirstPythonLayer(param);
    CORTADO_REQUIRE(python.empty(), "--gpu=", FLAGS_gpu, ": layer '", python, "' is a Python layer, and GPU threads "
                    "would share one Python interpreter; train it data-parallel as one process per GPU: mpirun -np ",
                    gpus.size(), " trainer train --solver=", FLAGS_solver, " --gpu=", FLAGS_gpu);
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
  std::_Exit(1);  // Abort ends every rank (MPI_Abort) and does not come back here
}

}  // namespace

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

}  // namespace trainer
