// gpu_step.cpp — GpuStepper (gpu_step.hpp): a training iteration queued without host waits, eagerly
// or as two CUDA graphs (pass, update) captured at the second iteration and replayed after.
#include "cortado/gpu_step.hpp"

#include <cuda_runtime.h>
#include <glog/logging.h>

#include <algorithm>
#include <cstring>
#include <functional>

#include "cortado/cuda/resources.hpp"
#include "cortado/error.hpp"
#include "cortado/gpu.hpp"
#include "cortado/math_gpu.hpp"
#include "cortado/parallel.hpp"
#include "cortado/step_inputs.hpp"
#include "step_stats.hpp"

namespace cortado {

namespace {

// Captures what `body` queues on `stream` (not running it) and instantiates it.
cudaGraphExec_t Capture(cudaStream_t stream, const std::function<void()>& body) {
  CORTADO_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  cudaGraph_t graph = nullptr;
  try {
    body();
  } catch (...) {
    cudaStreamEndCapture(stream, &graph);  // leaves the stream usable; errors ignored while unwinding
    if (graph != nullptr) cudaGraphDestroy(graph);
    cudaGetLastError();
    throw;
  }
  CORTADO_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec = nullptr;
  const cudaError_t status = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  CORTADO_CUDA_CHECK(status);
  return exec;
}

}  // namespace

// iter_size 1: one graph, `step` (the gradients cleared, the pass, the update); else `pass` (replayed
// iter_size times after one clear) and `update`.
struct GpuStepper::Graphs {
  void* step = nullptr;  // cudaGraphExec_t
  void* pass = nullptr;
  void* update = nullptr;
  ~Graphs() {
    for (void* graph : {step, pass, update})
      if (graph != nullptr) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(graph));
  }
};

// The pinned word the non-finite poll copies into, and the event that says it landed.
struct GpuStepper::Poll {
  Poll() {
    bool pinned = false;
    first = static_cast<int*>(HostAllocate(sizeof(int), &pinned));
    CHECK(pinned) << "pinned memory for the divergence poll";
    *first = -1;
  }
  ~Poll() {
    if (queued) cudaEventSynchronize(landed.get());  // errors ignored: may run while unwinding
    HostFree(first, true);
  }
  int* first = nullptr;
  cuda::Event landed;
  bool queued = false;
};

GpuStepper::GpuStepper(Context& ctx, Net& net, const SolverParameter& param, UpdateRule& rule, bool use_graphs)
    : ctx_(ctx), net_(net), param_(param), rule_(rule), graphs_(std::make_unique<Graphs>()),
      poll_(std::make_unique<Poll>()) {
  CHECK(ctx.device() == Device::kGPU) << "GpuStepper on a CPU context";
  iter_size_ = std::max(param.iter_size(), 1);
  average_ = std::max(param.average_loss(), 1);
  l1_ = IsL1Regularization(param);  // an unknown regularization_type fails now, not in the first step
  if (net.loss_scaling().dynamic) growth_interval_ = net.loss_scaling().growth_interval;
  if (net.loss_scaling().adaptive) adaptive_factor_ = net.loss_scaling().factor;
  StepInputs& inputs = StepInputsOf(ctx_);
  rate_slot_ = inputs.Reserve();
  correction_slot_ = inputs.Reserve();
  iter_slot_ = inputs.Reserve();
  DecideGraphs(use_graphs);
}

GpuStepper::~GpuStepper() = default;

void GpuStepper::DecideGraphs(bool requested) {
  const auto& layers = net_.layers();
  first_graph_layer_ = 0;
  for (size_t i = 0; i < layers.size(); ++i)
    if (!layers[i]->IsCapturable()) first_graph_layer_ = static_cast<int>(i) + 1;
  const Layer* blocker = nullptr;
  for (size_t i = 0; i < layers.size() && blocker == nullptr; ++i)
    if (net_.layer_need_backward()[i] && !layers[i]->IsCapturable()) blocker = layers[i].get();
  // A layer whose tops change shape in forward (Filter) reshapes the layers after it every pass; a
  // graph would replay the shapes of the captured iteration.
  const Layer* reshaper = nullptr;
  for (size_t i = 0; i < layers.size() && reshaper == nullptr; ++i)
    if (layers[i]->ReshapesTopsInForward()) reshaper = layers[i].get();
  graphs_enabled_ = false;
  if (!requested) {
    LOG(INFO) << "CUDA graphs off (--cuda_graph=false): every step is queued layer by layer";
  } else if (blocker != nullptr) {
    LOG(INFO) << "CUDA graphs off: " << blocker->Describe()
              << " cannot be captured (it waits for the GPU in its passes); every step is queued layer by layer";
  } else if (reshaper != nullptr) {
    LOG(INFO) << "CUDA graphs off: " << reshaper->Describe()
              << " changes the shapes of its tops every pass; every step is queued layer by layer";
  } else {
    graphs_enabled_ = true;
    const int last = static_cast<int>(layers.size()) - 1;
    std::string captured = first_graph_layer_ <= last
                               ? "the forward pass from layer " + layers[first_graph_layer_]->name() + ", "
                               : "";
    LOG(INFO) << "CUDA graphs on: " << captured << "the backward pass and the update are captured at the second "
              << "iteration and replayed; " << first_graph_layer_ << " data layer(s) run before each replay";
  }
}

void GpuStepper::RequestMemory(MemoryPlan& plan) {
  plan.Request(step_stats::StateFloats(average_), [this](float* state) { state_ = state; });
}

void GpuStepper::Bind(const std::vector<float*>& history) {
  CHECK(state_ != nullptr) << "GpuStepper::Bind before the arena";
  history_ = history;
  flat_ = FlatParamsOf(net_);
  step_stats::Reset(ctx_, state_);
  if (device_loss_scale()) {
    loss_tops_ = net_.loss_tops();
    step_stats::SetLossScale(ctx_, state_, net_.loss_scale(), 0);
  }
}

GpuStepper::LossScaleState GpuStepper::LossScale() {
  LossScaleState s;
  if (!device_loss_scale()) {
    s.scale = net_.loss_scale();
    return s;
  }
  float values[step_stats::kLastSkipped - step_stats::kLossScale + 1];
  GpuCopy(values, state_ + step_stats::kLossScale, sizeof values);
  s.scale = values[0];
  std::memcpy(&s.clean_steps, &values[step_stats::kCleanSteps - step_stats::kLossScale], sizeof(int));
  std::memcpy(&s.skipped_steps, &values[step_stats::kSkippedSteps - step_stats::kLossScale], sizeof(int));
  std::memcpy(&s.last_skipped, &values[step_stats::kLastSkipped - step_stats::kLossScale], sizeof(int));
  return s;
}

void GpuStepper::SetLossScale(float scale, int clean_steps) {
  if (device_loss_scale()) step_stats::SetLossScale(ctx_, state_, scale, clean_steps);
}

void GpuStepper::QueuePassBody() {
  // Dynamic or adaptive loss scaling: the backward pass starts from loss weight × the device's scale.
  for (const Net::LossTop& top : loss_tops_) step_stats::WriteLossDiff(ctx_, top.diff, top.count, top.weight, state_);
  const int last = static_cast<int>(net_.layers().size()) - 1;
  if (first_graph_layer_ <= last) net_.ForwardOnDevice(first_graph_layer_, last);
  net_.Backward();
  if (exchange_ != nullptr && iter_size_ == 1) exchange_->Finish();
}

void GpuStepper::QueueUpdateBody() {
  StepInputs& inputs = StepInputsOf(ctx_);
  // The gradients come out of the passes times iter_size and the loss scale: the net's static one, or
  // (dynamic, adaptive) the device's, which step_stats divides by and keeps up to date.
  const bool dynamic = device_loss_scale();
  const float grad_scale = 1.0f / (static_cast<float>(iter_size_) * (dynamic ? 1.0f : net_.loss_scale()));
  const float clip = param_.clip_gradients();
  step_stats::Queue(ctx_, flat_.count, flat_.diff, grad_scale, clip, iter_size_, average_,
                    inputs.device_word(iter_slot_), net_.loss_device(), state_, growth_interval_, adaptive_factor_);
  FusedUpdate fused;
  fused.rate = inputs.device_float(rate_slot_);
  fused.correction = inputs.device_float(correction_slot_);
  fused.clip_scale = clip >= 0 ? state_ + step_stats::kClipScale : nullptr;
  fused.grad_scale = grad_scale;
  if (dynamic) {  // the step's factor and its skip flag, from step_stats' finish
    fused.grad_scale_at = state_ + step_stats::kGradFactor;
    fused.skip = reinterpret_cast<const int*>(state_ + step_stats::kSkip);
  }
  fused.weight_decay = param_.weight_decay();
  fused.l1 = l1_;
  if (clip < 0) {  // no sum of squares to find a non-finite gradient: the update kernel watches for one
    fused.first_nonfinite = reinterpret_cast<int*>(state_ + step_stats::kFirstNonFinite);
    fused.iteration = inputs.device_word(iter_slot_);
  }
  gpu_update_fused(ctx_, rule_.constants(0), flat_, history_, fused);
}

void GpuStepper::RunPasses(int iter) {
  StepInputs& inputs = StepInputsOf(ctx_);
  last_rate_ = LearningRate(param_, iter);
  inputs.SetFloat(rate_slot_, last_rate_);
  inputs.SetFloat(correction_slot_, rule_.constants(iter).correction);
  inputs.SetWord(iter_slot_, static_cast<uint64_t>(iter));
  if (iter_size_ == 1) {  // one graph for the whole step: RunUpdate then launches nothing
    net_.PrepareStep();
    inputs.Upload(ctx_);
    if (first_graph_layer_ > 0) net_.ForwardOnDevice(0, first_graph_layer_ - 1);
    RunCaptured(&graphs_->step, [this] {
      net_.ClearParamDiffs();
      QueuePassBody();
      QueueUpdateBody();
    });
    return;
  }
  net_.ClearParamDiffs();
  for (int pass = 0; pass < iter_size_; ++pass) {
    net_.PrepareStep();
    inputs.Upload(ctx_);
    if (first_graph_layer_ > 0) net_.ForwardOnDevice(0, first_graph_layer_ - 1);
    RunCaptured(&graphs_->pass, [this] { QueuePassBody(); });
  }
  if (exchange_ != nullptr && iter_size_ > 1) exchange_->Finish();  // every bucket, after the last pass
}

void GpuStepper::RunUpdate(int iter) {
  if (iter_size_ > 1) RunCaptured(&graphs_->update, [this] { QueueUpdateBody(); });
  ++iterations_run_;
  PollNonFinite();
}

// From the second iteration on (the first warms up: lazy library set-up), `body` is captured into
// *graph once and replayed. A capture that fails (a library call that cannot be captured) is logged
// once and turns graphs off: the step, and every later one, is queued eagerly.
void GpuStepper::RunCaptured(void** graph, const std::function<void()>& body) {
  const cudaStream_t stream = cuda::Stream(ctx_);
  if (graphs_enabled_ && iterations_run_ > 0 && *graph == nullptr) {
    try {
      *graph = Capture(stream, body);
    } catch (const Error& error) {
      LOG(WARNING) << "CUDA graphs off: capturing the step failed (" << error.what()
                   << "); every step is queued layer by layer";
      graphs_enabled_ = false;
    }
  }
  if (graphs_enabled_ && *graph != nullptr) {
    CORTADO_CUDA_CHECK(cudaGraphLaunch(static_cast<cudaGraphExec_t>(*graph), stream));
    ++graph_launches_;
  } else {
    body();
  }
}

// Every kNonFinitePollInterval iterations: the device's first non-finite iteration is copied to pinned
// memory behind the step's work; the copy queued the time before is read if it has landed (an event
// query, never a wait), so a diverged run stops within about two intervals even when nothing is
// displayed.
void GpuStepper::PollNonFinite() {
  if (iterations_run_ % kNonFinitePollInterval != 0) return;
  if (poll_->queued) {
    const cudaError_t status = cudaEventQuery(poll_->landed.get());
    if (status == cudaErrorNotReady) {
      cudaGetLastError();  // not an error: the copy has not landed yet; keep it from the next launch check
      return;
    }
    CORTADO_CUDA_CHECK(status);
    poll_->queued = false;
    if (*poll_->first >= 0) diverged_at_ = *poll_->first;
  }
  const cudaStream_t stream = cuda::Stream(ctx_);
  CORTADO_CUDA_CHECK(cudaMemcpyAsync(poll_->first, state_ + step_stats::kFirstNonFinite, sizeof(int),
                                     cudaMemcpyDeviceToHost, stream));
  CORTADO_CUDA_CHECK(cudaEventRecord(poll_->landed.get(), stream));
  poll_->queued = true;
}

void GpuStepper::ResetLossAverage() { step_stats::ResetLosses(ctx_, state_); }

float GpuStepper::SmoothedLoss() {
  std::vector<float> state(step_stats::StateFloats(average_));
  GpuCopy(state.data(), state_, state.size() * sizeof(float));
  int count = 0;
  std::memcpy(&count, &state[step_stats::kLossCount], sizeof count);
  const int n = std::min(count, average_);
  if (n == 0) return 0.0f;
  double sum = 0;
  for (int j = 1; j <= n; ++j) sum += state[step_stats::kLossRing + (count - j) % average_];
  return static_cast<float>(sum / n);
}

float GpuStepper::GradientNorm() {
  float norm = 0;
  GpuCopy(&norm, state_ + step_stats::kNorm, sizeof norm);
  return norm;
}

int GpuStepper::FirstNonFiniteIteration() {
  int first = -1;
  GpuCopy(&first, state_ + step_stats::kFirstNonFinite, sizeof first);
  return first;
}

int GpuStepper::PolledNonFiniteIteration() const { return diverged_at_; }

}  // namespace cortado
