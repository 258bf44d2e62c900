// solver.hpp — training: the loop of forward, backward and update over a train net, periodic tests
// on the test nets, display lines in Caffe's wording, snapshots and restoring them.
//
// The solver owns the one arena: the train net, the test nets (which read the train net's
// parameters), and the update rule's history buffers are planned together and allocated once.
#pragma once

#include <chrono>
#include <csignal>
#include <memory>
#include <string>
#include <vector>

#include "cortado/context.hpp"
#include "cortado/cortado.pb.h"
#include "cortado/memory.hpp"
#include "cortado/net.hpp"

namespace cortado {

class UpdateRule;
struct FlatParams;
class GpuStepper;
class Ranks;
class GradientExchange;
class MetricsLog;

class Solver {
 public:
  // solver_path names the solver file: errors mention it, and an unset snapshot_prefix derives
  // from it. On a GPU, cuda_graph lets training steps be captured and replayed as CUDA graphs
  // (gpu_step.hpp); false queues every step layer by layer.
  // With `ranks` (parallel.hpp), this solver is one rank of data-parallel training: its train net's data
  // layers read the rank's block of every batch, the gradients are averaged over the ranks before each
  // update, the displayed loss and outputs are the means over the ranks, and rank 0 alone logs the
  // training lines, tests and writes snapshots. Every rank must be built with the same parameters
  // (the same random_seed, so the same initial weights and data order).
  Solver(const SolverParameter& param, const std::string& solver_path = "solver.prototxt", bool cuda_graph = true,
         Ranks* ranks = nullptr);
  ~Solver();

  // Builds the train and test nets on a plan-only context (Context::PlanOnly: for solver_mode GPU,
  // without needing a GPU) and plans their memory with the solver's history, allocating nothing.
  // Returns the bytes the arena would hold; *summary receives the plan's log line.
  static size_t PlanMemory(const SolverParameter& param, const std::string& solver_path, std::string* summary);

  // Trains to max_iter, from a snapshot when resume_file is given; snapshots at the end.
  void Solve(const std::string& resume_file = "");
  void Step(int iters);
  // pycaffe's apply_update: one update of the weights from the gradients now in the train net (a
  // script's own forward and backward), at the current iteration, which does not advance.
  void UpdateFromCurrentGradients();
  void TestAll();
  // Writes <prefix>_iter_<N>.caffemodel and .solverstate; returns the .solverstate path. With ranks,
  // every rank calls it (the generator states are gathered) and rank 0 writes (others return "").
  std::string Snapshot();
  // Takes the iteration, weights, history and generators back from a .solverstate (or .h5); a state
  // it refuses (an Error naming the file) leaves the solver as it was.
  void Restore(const std::string& solverstate_path);
  // The solver as it runs, to reproduce the run: its nets inline (read from their files and upgraded,
  // the batch as set, the solver's memory_reuse, fuse, precision and layout rules applied), the update
  // rule by its type name, and the random seed in use (the one drawn when random_seed is -1).
  SolverParameter ResolvedParameter() const;
  // Has the first snapshot also write ResolvedParameter() and its train net as
  // <prefix>_resolved_solver.prototxt and <prefix>_resolved_net.prototxt (trainer train does). They are
  // resolved now, after construction, so that a net file edited during a long run is not what they say.
  void WriteResolvedAtFirstSnapshot();

  // Asks the loop to stop (or snapshot) at the end of the current iteration; safe from a signal handler.
  // With ranks, every rank stops (or snapshots) at the end of the first iteration in which any asked.
  void RequestStop() { stop_requested_ = 1; }
  void RequestSnapshot() { snapshot_requested_ = 1; }

  int iter() const { return iter_; }
  const SolverParameter& param() const { return param_; }
  Net* net() { return net_.get(); }
  const std::vector<std::unique_ptr<Net>>& test_nets() const { return test_nets_; }
  Context& context() { return ctx_; }
  // The loss averaged over the last average_loss iterations of the current Step (on a GPU: read from
  // the device, waiting for it).
  float smoothed_loss();
  // GPU training: the stepper (whether it replays CUDA graphs, how often); null on the CPU.
  const GpuStepper* gpu_stepper() const { return stepper_.get(); }
  // The mean of each test-net output at the last test of test net i (in output order).
  const std::vector<float>& last_test_scores(int i) const { return last_test_scores_[i]; }
  // Data-parallel training: whether this solver logs, tests and snapshots (rank 0, or no ranks), and
  // the host seconds it has waited for the averaged gradients.
  bool is_root() const;
  // Dynamic loss scaling: the steps this solver skipped because a gradient overflowed.
  int skipped_steps() const { return skipped_steps_; }
  double exchange_wait_seconds() const;

 private:
  struct PlanOnlyTag {};
  // What a Step's display lines measure from: where the Step began, and the time, iteration, data wait
  // and exchange wait of the last display.
  struct StepMarks {
    int start_iter = 0;
    std::chrono::steady_clock::time_point start, last_display;
    int last_display_iter = 0;
    double last_data_wait = 0, last_exchange_wait = 0;
    bool train_has_reader = false;  // the train net has data layers, whose waits a display reports
  };

  Solver(const SolverParameter& param, const std::string& solver_path, PlanOnlyTag);
  // Shared by both constructors: the update rule and the nets, and the plan of their memory with
  // the history (and on a GPU, the stepper's state).
  void BuildAndPlan(MemoryPlan& plan, bool cuda_graph);
  void InitTrainNet();
  void InitTestNets();
  void RefuseUntestedTestLayers(const NetParameter& net) const;
  // What the solver's fields change in every net it builds (memory_reuse, fuse, precision, layout).
  void ApplyNetRules(NetParameter* net) const;
  void CheckSnapshotDirectory() const;

  // ---- Step's parts, in the order of an iteration (solver.cpp; the display in solver_report.cpp) ----
  // Starts the loss average and the marks over again; with ranks, the first Step joins them (JoinRanks).
  StepMarks BeginStep(int stop_iter);
  // Tests every test net on the iterations test_interval names (rank 0).
  void TestIfDue();
  // CPU: iter_size forward-backward passes (the last one exchanging the gradients with the other ranks),
  // the loss averaged over the passes and the ranks, stopping if it or a gradient is not finite.
  void StepOnCpu(int start_iter);
  // GPU: the passes and the update queued by the stepper; the loss is read from the device only to
  // display it, or when the stepper's poll saw a non-finite value.
  void StepOnGpu(bool display);
  // A display iteration: the train net's outputs averaged over the ranks (every rank takes part), then
  // rank 0's lines (loss and speed, outputs, data and exchange waits, progress) and metrics record.
  void Display(StepMarks* marks);
  std::vector<double> MeanTrainOutputs();
  void LogTrainOutputs(const std::vector<double>& outputs) const;
  // The shares of the `lapse` seconds since the last display spent waiting for data and for the exchange.
  void LogWaits(double lapse, double exchange_wait, StepMarks* marks) const;
  // After the update: the next iteration, and the snapshots due (snapshot interval, or asked for).
  // Returns whether a stop was asked (with ranks: by any rank).
  bool AdvanceIteration();

  void ApplyUpdate();
  // Mixed precision: divides the gradients by the loss scale (and iter_size) and chooses the next
  // step's scale; false when the step is skipped (dynamic scaling found a non-finite gradient).
  bool UnscaleGradients(const FlatParams& flat);
  void Test(int test_net_id);
  void UpdateSmoothedLoss(float loss, int start_iter);
  // "Progress: N/max_iter iterations (P%), ETA ..." on its own line after the display line.
  void LogProgress(double elapsed_s, int iters_done) const;
  // Throws the Error that ends a run whose loss or gradients stopped being finite.
  [[noreturn]] void StopDiverged(int iteration, float loss);
  // GPU: stops the way StopDiverged does if an iteration so far had a non-finite loss or gradient.
  void CheckGpuDivergence();
  // GPU: the lines ApplyUpdate logs on display iterations (the rate, clipping).
  void LogGpuUpdate();
  void LogGpuSkippedSteps();
  // snapshot_prefix, or the solver file's path without its extension.
  std::string SnapshotPrefix() const;
  std::string SnapshotFilename(const std::string& extension) const;
  // The layers with a data reader: train net first, then each test net, in layer order.
  std::vector<Layer*> Readers() const;
  void RestoreReaders(const SolverState& state, const std::string& path);
  std::string RankRngState(const SolverState& state, const std::string& path) const;
  void ReseedRankAfterRestore(const SolverState& state, const std::string& path);
  // Seconds the train net's data layers have waited for batches, in total.
  double DataWaitSeconds() const;
  // Data parallel: sets up the gradient exchange and gives every rank rank 0's parameters (collective;
  // at the first Step, once every rank has been built and restored).
  void JoinRanks();
  // Data parallel, each iteration after the gradients were averaged: the ranks' mean loss, and whether
  // any rank asked to stop or snapshot (the answers land in stop_agreed_, snapshot_agreed_).
  float AgreeOnIteration(float loss);
  // Data parallel: values[i] averaged over the ranks (collective; nothing without ranks).
  void MeanOverRanks(std::vector<double>* values);

  SolverParameter param_;
  std::string solver_path_;
  Context ctx_;
  std::unique_ptr<Net> net_;
  std::vector<std::unique_ptr<Net>> test_nets_;
  std::unique_ptr<UpdateRule> rule_;
  std::vector<float*> history_;
  std::unique_ptr<Arena> arena_;
  std::unique_ptr<GpuStepper> stepper_;  // GPU training steps
  int iter_ = 0;
  std::unique_ptr<SolverParameter> resolved_;  // for the first snapshot to write, then none
  std::vector<float> losses_;
  float smoothed_loss_ = 0;
  std::vector<std::vector<float>> last_test_scores_;
  volatile std::sig_atomic_t stop_requested_ = 0;
  volatile std::sig_atomic_t snapshot_requested_ = 0;
  Ranks* ranks_ = nullptr;  // data parallel; null: this solver trains alone
  std::unique_ptr<GradientExchange> exchange_;
  std::unique_ptr<MetricsLog> metrics_;  // Solve's metrics file (write_metrics; rank 0 only)
  bool exchange_per_layer_ = false;  // Backward's observer starts buckets (the last pass of an iteration)
  bool stop_agreed_ = false, snapshot_agreed_ = false;
  bool stopped_early_ = false;  // the last Step ended on a stop request
  bool gradients_overflowed_ = false;  // dynamic loss scaling: this step's gradients hold inf or NaN
  int clean_steps_ = 0;                // dynamic loss scaling: steps since the scale last changed
  int skipped_steps_ = 0;              // dynamic loss scaling: steps skipped in this run
};

// Reads a solver prototxt (errors name file:line:column).
SolverParameter ReadSolverParameter(const std::string& path);
// The GPU settings a solver's fields ask for (strict_fp32, deterministic, cudnn_workspace_limit_mb);
// an out-of-range limit is an Error naming `source`.
GpuSettings GpuSettingsOf(const SolverParameter& param, const std::string& source);
// One log line: TF32 or strict FP32, which cuDNN algorithms, the workspace limit.
void LogGpuSettings(const Context& ctx);

// Device time between points of a GPU context's compute stream (trainer time --gpu): Mark(i) records
// CUDA event i on the stream, so a span measures the GPU's work, not the host's launches. After
// Wait(), Milliseconds(i, j) is the time from mark i to mark j. The events are created once, here.
// src/solvers/cuda/gpu_timeline.cu; a CPU-only build's stub throws.
class GpuTimeline {
 public:
  GpuTimeline(Context& ctx, int marks);
  ~GpuTimeline();
  GpuTimeline(const GpuTimeline&) = delete;
  GpuTimeline& operator=(const GpuTimeline&) = delete;

  void Mark(int i);
  void Wait();  // until the GPU has passed every recorded mark
  double Milliseconds(int from, int to) const;

 private:
  struct Events;
  Context& ctx_;
  std::unique_ptr<Events> events_;
};

}  // namespace cortado
