// gpu_step.hpp — a training iteration on a GPU that the host queues without waiting, and, after a
// warm-up iteration, replays as CUDA graphs.
//
// Per iteration the host only: computes the learning rate (and Adam's correction) and lets each layer
// draw its step's random numbers, writing them to the context's StepInputs (one asynchronous copy);
// clears the gradients; runs the data layers (their batches come from pinned memory on the copy
// stream, the compute stream waiting on an event); and queues the rest:
//   pass    the forward pass of the layers after the last data layer, then the backward pass
//           (iter_size times, the data layers running before each);
//   update  with clip_gradients set, the gradient's sum of squares (blocks of partial sums in double, in
//           a fixed order); one thread finishing the step — the loss into a ring of the last
//           average_loss losses, the gradient norm and clipping's scale, the first iteration whose loss
//           or gradient was not finite — and the fused update kernel (clipping, weight decay and the
//           rule, update_rules.hpp), which without clipping is what notices a non-finite gradient.
// With graphs on, the second iteration captures pass and update once each (stream capture) and every
// later iteration replays them: a handful of host calls per step whatever the depth of the net. Graphs
// need every layer after the data layers, and every layer with a backward pass, to be capturable
// (Layer::IsCapturable), and no layer to change the shapes of its tops in forward (a Filter); otherwise
// the log names the layer and the step runs eagerly. A capture that fails turns graphs off (logged).
//
// The host reads the device only when asked (SmoothedLoss, FirstNonFiniteIteration, GradientNorm):
// on display, test and snapshot iterations; and every kNonFinitePollInterval iterations it queues a
// copy of the non-finite flag that it reads, once landed, without waiting (PolledNonFiniteIteration).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cortado/context.hpp"
#include "cortado/cortado.pb.h"
#include "cortado/memory.hpp"
#include "cortado/net.hpp"
#include "cortado/update_rules.hpp"

namespace cortado {

class GradientExchange;

class GpuStepper {
 public:
  GpuStepper(Context& ctx, Net& net, const SolverParameter& param, UpdateRule& rule, bool use_graphs);
  ~GpuStepper();
  GpuStepper(const GpuStepper&) = delete;
  GpuStepper& operator=(const GpuStepper&) = delete;

  // The step's device state (partial sums, loss ring, norm, flags) goes into the solver's arena.
  void RequestMemory(MemoryPlan& plan);
  // After the arena exists: the rule's history buffers.
  void Bind(const std::vector<float*>& history);
  // Data parallel (parallel.hpp): the exchange that averages the gradients over the ranks. With
  // iter_size 1 its buckets start inside the pass (the net's backward observer) and the pass ends with
  // its Finish; with iter_size > 1 (the passes replay one graph) it runs after the last pass.
  void SetExchange(GradientExchange* exchange) { exchange_ = exchange; }

  // Forward and backward, iter_size times, for iteration `iter` (rate and Adam's t come from it). With
  // iter_size 1 the gradients' clearing, the pass and the update are queued together (with graphs, as
  // one graph) and RunUpdate queues nothing more.
  void RunPasses(int iter);
  // The gradient statistics and the update of iteration `iter` (iter_size > 1), and the poll for a
  // non-finite value; after RunPasses(iter).
  void RunUpdate(int iter);

  // Restarts the smoothed loss (a new Solve or Step call).
  void ResetLossAverage();
  // Waits for the device. The mean of the last min(iterations since ResetLossAverage, average_loss)
  // losses; the gradient norm of the last update (before clipping; −1 without clip_gradients, which
  // alone needs it); the first iteration whose loss or gradient was not finite, or −1.
  float SmoothedLoss();
  float GradientNorm();
  int FirstNonFiniteIteration();
  // Without waiting: the first non-finite iteration as of the last poll that landed (RunUpdate polls
  // every kNonFinitePollInterval iterations), or −1.
  int PolledNonFiniteIteration() const;
  static constexpr int kNonFinitePollInterval = 20;

  // Dynamic loss scaling, kept on the device (step_stats.hpp): waits for it. The scale of the next
  // step, the clean steps since it last changed, the steps skipped since the stepper was made and the
  // last of them (−1: none).
  struct LossScaleState {
    float scale = 1;
    int clean_steps = 0, skipped_steps = 0, last_skipped = -1;
  };
  LossScaleState LossScale();
  // A restored run's scale and clean-step count.
  void SetLossScale(float scale, int clean_steps);
  // Whether the device keeps the loss scale (dynamic or adaptive scaling) rather than the net.
  bool device_loss_scale() const { return growth_interval_ > 0 || adaptive_factor_ > 0.0f; }

  float last_rate() const { return last_rate_; }  // the rate RunPasses computed (and logged, if multistep)
  bool using_graphs() const { return graphs_enabled_; }
  int graph_launches() const { return graph_launches_; }

 private:
  struct Graphs;
  struct Poll;
  void RunCaptured(void** graph, const std::function<void()>& body);
  void PollNonFinite();
  void QueuePassBody();    // forward of the capturable layers, then backward
  void QueueUpdateBody();  // statistics, then the fused update
  void DecideGraphs(bool requested);

  Context& ctx_;
  Net& net_;
  GradientExchange* exchange_ = nullptr;
  const SolverParameter& param_;
  UpdateRule& rule_;
  FlatParams flat_;
  std::vector<float*> history_;
  int iter_size_ = 1;
  int growth_interval_ = 0;      // dynamic loss scaling's (Net::LossScaling); 0: not dynamic
  float adaptive_factor_ = 0.0f;  // adaptive loss scaling's K (Net::LossScaling::factor); 0: not adaptive
  std::vector<Net::LossTop> loss_tops_;
  bool l1_ = false;  // regularization_type L1
  int average_ = 1;
  int first_graph_layer_ = 0;  // layers before it (the data layers) run eagerly every pass
  bool graphs_enabled_ = false;
  int graph_launches_ = 0;
  int iterations_run_ = 0;
  float last_rate_ = 0;
  int rate_slot_ = -1, correction_slot_ = -1, iter_slot_ = -1;
  float* state_ = nullptr;  // device: see gpu_step.cpp
  std::unique_ptr<Graphs> graphs_;
  std::unique_ptr<Poll> poll_;
  int diverged_at_ = -1;
};

}  // namespace cortado
