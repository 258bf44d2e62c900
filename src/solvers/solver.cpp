// solver.cpp — the training loop: nets and memory at setup, then iterations of test / forward-backward
// / display / update / snapshot, with Caffe's log lines. On a GPU context a GpuStepper queues each
// step without waiting (gpu_step.hpp); the host reads the device only to display (loss, divergence,
// outputs, clipping), to test and to snapshot. The display lines and tests are in solver_report.cpp,
// snapshots and restoring them in solver_snapshot.cpp.
#include "cortado/solver.hpp"

#include <glog/logging.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <set>

#include "cortado/batch_pipeline.hpp"  // RecordSeed
#include "cortado/divergence.hpp"
#include "cortado/error.hpp"
#include "cortado/gpu.hpp"
#include "cortado/gpu_step.hpp"
#include "cortado/io.hpp"
#include "cortado/math.hpp"
#include "cortado/math_gpu.hpp"
#include "cortado/metrics_log.hpp"
#include "cortado/parallel.hpp"
#include "cortado/update_rules.hpp"

namespace cortado {

namespace {

// solver_mode GPU trains on GPU device_id when there is a GPU (the trainer's --gpu sets both), else
// on the CPU, saying so.
Device ChooseDevice(const SolverParameter& param) {
  if (param.solver_mode() != SolverParameter::GPU) return Device::kCPU;
  if (GpuCount() == 0) {
    LOG(INFO) << "solver_mode is GPU but " << (BuiltWithCuda() ? "no GPU was found" : "this build has no CUDA support")
              << "; training on the CPU";
    return Device::kCPU;
  }
  LOG(INFO) << "Training on GPU " << param.device_id();
  return Device::kGPU;
}

NetParameter ReadNetParameter(const std::string& path) {
  NetParameter param;
  ReadProtoFromTextFile(path, &param);
  return param;
}

// Merges the solver's state for a net into the net's own state, with the given phase.
void SetState(NetParameter* net, Phase phase, const NetState* extra) {
  NetState state;
  state.CopyFrom(net->state());
  state.set_phase(phase);
  if (extra) state.MergeFrom(*extra);
  state.set_phase(phase);
  *net->mutable_state() = state;
}

}  // namespace

GpuSettings GpuSettingsOf(const SolverParameter& param, const std::string& source) {
  const int limit_mb = param.cudnn_workspace_limit_mb();
  CORTADO_REQUIRE(limit_mb >= 0 && limit_mb <= 8191, source, ": cudnn_workspace_limit_mb must be between 0 and ",
                  "8191, not ", limit_mb);
  GpuSettings settings;
  settings.strict_fp32 = param.strict_fp32();
  settings.deterministic = param.deterministic();
  settings.cudnn_workspace_limit = static_cast<size_t>(limit_mb) << 20;
  return settings;
}

void LogGpuSettings(const Context& ctx) {
  const GpuSettings& s = ctx.gpu_settings();
  LOG(INFO) << "GPU math: "
            << (ctx.tf32() ? "TF32 tensor cores for convolutions and inner products (strict_fp32 turns them off)"
                           : s.strict_fp32 ? "strict FP32 (strict_fp32)" : "FP32 (this GPU has no TF32 tensor cores)")
            << "; cuDNN algorithms " << (s.deterministic ? "deterministic where one fits" : "the fastest")
            << ", workspace up to " << (s.cudnn_workspace_limit >> 20) << " MiB per convolution";
}

SolverParameter ReadSolverParameter(const std::string& path) {
  SolverParameter param;
  ReadProtoFromTextFile(path, &param);
  return param;
}

Solver::Solver(const SolverParameter& param, const std::string& solver_path, bool cuda_graph, Ranks* ranks)
    : param_(param),
      solver_path_(solver_path),
      ctx_(ChooseDevice(param), param.random_seed(), param.device_id()) {
  ranks_ = ranks;
  if (ranks_ != nullptr) {
    CORTADO_REQUIRE(param_.exchange_bucket_mb() > 0, solver_path_, ": exchange_bucket_mb must be positive, not ",
                    param_.exchange_bucket_mb());
    CORTADO_REQUIRE(param_.random_seed() >= 0, solver_path_, ": every rank of data-parallel training needs the "
                    "same random_seed (trainer train draws one on rank 0 when the solver has none)");
    ctx_.SetDataParallelRank(ranks_->rank(), ranks_->size());
  }
  MemoryPlan plan(ctx_.device());
  BuildAndPlan(plan, cuda_graph);
  LOG(INFO) << plan.Summary();
  LOG(INFO) << "Reserving " << plan.bytes() << " bytes for nets, parameters and solver history";
  arena_ = plan.Allocate();
  net_->Initialize();
  for (auto& test_net : test_nets_) test_net->Initialize();
  for (float* h : history_) {
    if (ctx_.device() == Device::kGPU) {
      gpu_set(ctx_, net_->param_count(), 0.0f, h);
    } else {
      cpu_set(net_->param_count(), 0.0f, h);
    }
  }
  if (stepper_) stepper_->Bind(history_);
  if (ranks_ != nullptr) {
    // From here on each rank draws random numbers of its own (dropout masks); rank 0 the ones it
    // would draw alone. Setup drew the same ones everywhere: weights, rand_skip, the data seeds.
    if (ranks_->rank() > 0) ctx_.Reseed(static_cast<int64_t>(RecordSeed(param_.random_seed(), ranks_->rank()) >> 1));
    const int batch = net_->layers().empty() || net_->top_vecs()[0].empty() ? 0 : net_->top_vecs()[0][0]->shape(0);
    LOG(INFO) << "Data-parallel training: " << ranks_->size() << (ranks_->size() == 1 ? " rank (" : " ranks (")
              << ranks_->kind() << ", "
              << (ctx_.device() == Device::kGPU ? "GPUs, NCCL" : "CPUs") << "), batch " << batch
              << " per rank, effective batch " << int64_t{batch} * ranks_->size();
  }
  LOG(INFO) << "Solver scaffolding done.";
}

bool Solver::is_root() const { return ranks_ == nullptr || ranks_->rank() == 0; }

double Solver::exchange_wait_seconds() const { return exchange_ ? exchange_->wait_seconds() : 0.0; }

void Solver::JoinRanks() {
  exchange_ = GradientExchange::Create(*ranks_, ctx_, *net_,
                                       static_cast<size_t>(double{param_.exchange_bucket_mb()} * 1048576.0));
  // On a GPU with iter_size > 1 the passes replay one CUDA graph, so the stepper exchanges after the
  // last pass; otherwise each bucket starts as soon as backward has produced it.
  exchange_per_layer_ = !stepper_ || std::max(param_.iter_size(), 1) == 1;
  net_->SetBackwardObserver([this](int layer) {
    if (exchange_per_layer_) exchange_->LayerDone(layer);
  });
  if (stepper_) stepper_->SetExchange(exchange_.get());
  LOG(INFO) << "Gradient exchange: " << exchange_->num_buckets() << " bucket(s) of about "
            << param_.exchange_bucket_mb() << " MiB over " << net_->param_count() << " parameters";
  // Every rank starts from rank 0's parameters (the same seed made the same ones; --weights and
  // --snapshot were loaded by every rank; this makes sure).
  std::vector<float> host(static_cast<size_t>(net_->param_count()));
  if (ctx_.device() == Device::kGPU) {
    gpu_download(ctx_, net_->param_count(), net_->param_data(), host.data());
  } else {
    std::copy(net_->param_data(), net_->param_data() + net_->param_count(), host.begin());
  }
  ranks_->Broadcast(host.data(), host.size() * sizeof(float), 0);
  if (ctx_.device() == Device::kGPU) {
    gpu_upload(ctx_, net_->param_count(), host.data(), net_->param_data());
  } else {
    std::copy(host.begin(), host.end(), net_->param_data());
  }
}

float Solver::AgreeOnIteration(float loss) {
  double values[3] = {loss, static_cast<double>(stop_requested_), static_cast<double>(snapshot_requested_)};
  ranks_->SumOnHost(values, 3);
  if (values[2] > 0) snapshot_requested_ = 0;  // this iteration's agreement takes the request
  stop_agreed_ = values[1] > 0;
  snapshot_agreed_ = values[2] > 0;
  return static_cast<float>(values[0] / ranks_->size());
}

void Solver::MeanOverRanks(std::vector<double>* values) {
  if (ranks_ == nullptr) return;
  ranks_->SumOnHost(values->data(), static_cast<int>(values->size()));
  for (double& value : *values) value /= ranks_->size();
}

Solver::Solver(const SolverParameter& param, const std::string& solver_path, PlanOnlyTag)
    : param_(param),
      solver_path_(solver_path),
      ctx_(param.solver_mode() == SolverParameter::GPU ? Device::kGPU : Device::kCPU, Context::PlanOnly{}) {}

size_t Solver::PlanMemory(const SolverParameter& param, const std::string& solver_path, std::string* summary) {
  Solver solver(param, solver_path, PlanOnlyTag{});
  MemoryPlan plan(solver.ctx_.device());
  solver.BuildAndPlan(plan, false);
  if (summary) *summary = plan.Summary();
  return plan.bytes();
}

void Solver::BuildAndPlan(MemoryPlan& plan, bool cuda_graph) {
  CORTADO_REQUIRE(param_.max_iter() >= 0, solver_path_, ": max_iter is ", param_.max_iter(),
                  "; it is the iteration training stops at and cannot be negative");
  for (int i = 0; i < param_.test_iter_size(); ++i)
    CORTADO_REQUIRE(param_.test_iter(i) > 0, solver_path_, ": test_iter is ", param_.test_iter(i),
                    param_.test_iter_size() > 1 ? " for test net #" + std::to_string(i) : std::string(),
                    "; it is the number of batches each test runs and must be positive");
  rule_ = UpdateRule::Create(param_);
  LearningRate(param_, 0);  // validates the policy and its fields before any work
  if (ctx_.device() == Device::kGPU) {
    ctx_.SetGpuSettings(GpuSettingsOf(param_, solver_path_));
    if (!ctx_.plan_only()) LogGpuSettings(ctx_);
  }
  InitTrainNet();
  InitTestNets();
  // One arena: train net, test nets, history. A test runs between training steps, so the test nets
  // reuse the train net's lifetime-packed buffers and workspace.
  const MemorySharing sharing{plan.AddSharedRegion(), plan.AddSharedRegion()};
  net_->RequestMemory(plan, sharing);
  for (auto& test_net : test_nets_) test_net->RequestMemory(plan, sharing);
  history_.assign(rule_->num_history(), nullptr);
  for (int k = 0; k < rule_->num_history(); ++k)
    plan.Request(net_->param_count(), [this, k](float* h) { history_[k] = h; }, MemoryUse::kSolverHistory);
  if (ctx_.device() == Device::kGPU && !ctx_.plan_only()) {  // (its state is a few floats)
    stepper_ = std::make_unique<GpuStepper>(ctx_, *net_, param_, *rule_, cuda_graph);
    stepper_->RequestMemory(plan);
  }
}

// The arena goes before the nets: let a GPU finish what it was doing with them first (a batch copy
// or kernel still in flight after an error).
Solver::~Solver() {
  try {
    ctx_.Synchronize();
  } catch (const Error&) {
    // an earlier CUDA error: nothing more to wait for
  }
}

void Solver::InitTrainNet() {
  const int sources = param_.has_train_net() + param_.has_train_net_param() + param_.has_net() +
                      param_.has_net_param();
  CORTADO_REQUIRE(sources >= 1, solver_path_, ": no train net; set net (a prototxt path) or net_param");
  CORTADO_REQUIRE(sources == 1, solver_path_, ": give the train net once (net, net_param, train_net or "
                  "train_net_param), not ", sources, " times");
  NetParameter net_param;
  std::string source = solver_path_;
  if (param_.has_train_net_param()) {
    net_param = param_.train_net_param();
  } else if (param_.has_train_net()) {
    source = param_.train_net();
    net_param = ReadNetParameter(source);
  } else if (param_.has_net_param()) {
    net_param = param_.net_param();
  } else {
    source = param_.net();
    net_param = ReadNetParameter(source);
  }
  LOG(INFO) << "Creating training net from " << source;
  SetState(&net_param, TRAIN, param_.has_train_state() ? &param_.train_state() : nullptr);
  ApplyNetRules(&net_param);
  net_ = std::make_unique<Net>(net_param, ctx_, source);
  bool has_loss = false;
  for (float weight : net_->blob_loss_weights()) has_loss |= weight != 0;
  CORTADO_REQUIRE(has_loss, source, ": the training net '", net_->name(), "' has no loss: add a loss "
                  "layer (e.g. SoftmaxWithLoss or EuclideanLoss) or give a top a loss_weight");
}

void Solver::InitTestNets() {
  std::vector<std::pair<std::string, NetParameter>> sources;
  for (const auto& p : param_.test_net_param()) sources.push_back({solver_path_, p});
  for (const auto& path : param_.test_net()) sources.push_back({path, ReadNetParameter(path)});
  const int explicit_nets = static_cast<int>(sources.size());
  if (param_.has_net() || param_.has_net_param()) {
    // The general net also serves as test net, once per remaining test_iter entry.
    const int remaining = std::max(param_.test_iter_size() - explicit_nets, 0);
    for (int i = 0; i < remaining; ++i) {
      if (param_.has_net_param()) {
        sources.push_back({solver_path_, param_.net_param()});
      } else {
        sources.push_back({param_.net(), ReadNetParameter(param_.net())});
      }
    }
  }
  const int n = static_cast<int>(sources.size());
  if (n == 0 && param_.test_interval() > 0 && (param_.has_net() || param_.has_net_param()))
    RefuseUntestedTestLayers(param_.has_net_param() ? param_.net_param() : ReadNetParameter(param_.net()));
  CORTADO_REQUIRE(param_.test_iter_size() == n || (n == 0 && param_.test_iter_size() == 0),
                  solver_path_, ": ", n, " test net(s) but ", param_.test_iter_size(),
                  " test_iter value(s); give one test_iter per test net");
  CORTADO_REQUIRE(n == 0 || param_.test_interval() > 0 || !param_.has_test_interval(), solver_path_,
                  ": test_interval must be positive");
  CORTADO_REQUIRE(param_.test_state_size() == 0 || param_.test_state_size() == n, solver_path_, ": ",
                  param_.test_state_size(), " test_state entries for ", n, " test nets");
  for (int i = 0; i < n; ++i) {
    LOG(INFO) << "Creating test net (#" << i << ") specified by " << sources[i].first;
    NetParameter net_param = sources[i].second;
    SetState(&net_param, TEST, param_.test_state_size() ? &param_.test_state(i) : nullptr);
    ApplyNetRules(&net_param);
    test_nets_.push_back(std::make_unique<Net>(net_param, ctx_, sources[i].first));
    test_nets_.back()->ShareTrainedLayersWith(net_.get());
  }
  last_test_scores_.resize(n);
}

// test_interval with a net that has TEST-phase layers but no test_iter: Caffe builds no test net and
// never tests, silently. Say so instead.
void Solver::ApplyNetRules(NetParameter* net) const {
  if (!param_.memory_reuse()) net->set_memory_reuse(false);
  if (!param_.fuse()) net->set_fuse(false);
  if (param_.has_precision()) SetNetPrecision(net, param_.precision());
  if (param_.has_layout()) net->set_layout(param_.layout());
}

void Solver::RefuseUntestedTestLayers(const NetParameter& net) const {
  auto layers_in = [&net](Phase phase) {
    NetParameter filtered(net);
    filtered.mutable_state()->set_phase(phase);
    const NetParameter kept = Net::FilterByState(filtered);
    std::set<std::string> names;
    for (const auto& layer : kept.layer()) names.insert(layer.name());
    return names;
  };
  const std::set<std::string> train = layers_in(TRAIN);
  std::string test_only;
  int count = 0;
  for (const std::string& name : layers_in(TEST)) {
    if (train.count(name)) continue;
    if (++count <= 3) test_only += (test_only.empty() ? "" : ", ") + name;
  }
  if (count == 0) return;
  Fail(solver_path_, ": test_interval is ", param_.test_interval(), " but no test_iter is given, so the net's ",
       count, " TEST-phase layer", count == 1 ? "" : "s", " (", test_only, count > 3 ? ", ..." : "",
       ") would never run; add test_iter: N (the batches each test runs) or remove test_interval");
}

void Solver::Solve(const std::string& resume_file) {
  if (is_root()) CheckSnapshotDirectory();
  LOG(INFO) << "Solving " << net_->name();
  LOG(INFO) << "Learning Rate Policy: " << param_.lr_policy();
  if (!resume_file.empty()) {
    LOG(INFO) << "Restoring previous solver status from " << resume_file;
    Restore(resume_file);
  }
  if (is_root() && param_.write_metrics())
    metrics_ = std::make_unique<MetricsLog>(SnapshotPrefix() + "_metrics.jsonl", resume_file.empty() ? -1 : iter_);
  Step(param_.max_iter() - iter_);
  if (stopped_early_) {
    Snapshot();
    LOG_IF(INFO, is_root()) << "Optimization stopped early.";
    return;
  }
  if (param_.snapshot_after_train() && (!param_.snapshot() || iter_ % param_.snapshot() != 0))
    Snapshot();
  // A last display and test after the final update, as Caffe does.
  if (param_.display() && iter_ % param_.display() == 0) {
    std::vector<double> loss = {net_->Forward()};
    MeanOverRanks(&loss);
    UpdateSmoothedLoss(static_cast<float>(loss[0]), iter_);
    LOG_IF(INFO, is_root()) << "Iteration " << iter_ << ", loss = " << smoothed_loss_;
    if (metrics_) metrics_->Train(iter_, LearningRate(param_, iter_), smoothed_loss_, {});
  }
  if (param_.test_interval() && iter_ % param_.test_interval() == 0 && is_root()) TestAll();
  LOG_IF(INFO, is_root()) << "Optimization Done.";
  metrics_.reset();
}

void Solver::UpdateSmoothedLoss(float loss, int start_iter) {
  const int average = std::max(param_.average_loss(), 1);
  if (static_cast<int>(losses_.size()) < average) {
    losses_.push_back(loss);
    smoothed_loss_ = (smoothed_loss_ * (losses_.size() - 1) + loss) / losses_.size();
  } else {
    const int idx = (iter_ - start_iter) % average;
    smoothed_loss_ += (loss - losses_[idx]) / average;
    losses_[idx] = loss;
  }
}

void Solver::Step(int iters) {
  const int stop_iter = iter_ + iters;
  StepMarks marks = BeginStep(stop_iter);
  while (iter_ < stop_iter) {
    TestIfDue();
    const bool display = param_.display() && iter_ % param_.display() == 0;
    if (stepper_) {
      StepOnGpu(display);
    } else {
      StepOnCpu(marks.start_iter);
    }
    if (display) Display(&marks);
    if (stepper_) {  // the stepper queued the update with the passes
      if (display && is_root()) LogGpuUpdate();
    } else {
      ApplyUpdate();
    }
    if (AdvanceIteration()) {
      stopped_early_ = true;
      break;
    }
  }
  if (stepper_) CheckGpuDivergence();
}

Solver::StepMarks Solver::BeginStep(int stop_iter) {
  StepMarks marks;
  marks.start_iter = iter_;
  losses_.clear();
  smoothed_loss_ = 0;
  if (stepper_) stepper_->ResetLossAverage();
  marks.start = std::chrono::steady_clock::now();
  marks.last_display = marks.start;
  marks.last_display_iter = iter_;
  marks.last_data_wait = DataWaitSeconds();
  for (const auto& layer : net_->layers()) marks.train_has_reader |= layer->HasReader();
  stopped_early_ = false;
  if (ranks_ != nullptr && !exchange_ && iter_ < stop_iter) JoinRanks();
  marks.last_exchange_wait = exchange_wait_seconds();
  return marks;
}

void Solver::TestIfDue() {
  if (param_.test_interval() && iter_ % param_.test_interval() == 0 &&
      (iter_ > 0 || param_.test_initialization()) && is_root()) {
    TestAll();
  }
}

void Solver::StepOnCpu(int start_iter) {
  const int iter_size = std::max(param_.iter_size(), 1);
  net_->ClearParamDiffs();
  float loss = 0;
  for (int i = 0; i < iter_size; ++i) {
    exchange_per_layer_ = exchange_ && i == iter_size - 1;  // the gradients are complete in the last pass
    loss += net_->Forward();
    net_->Backward();
  }
  if (exchange_) exchange_->Finish();
  loss /= iter_size;
  if (ranks_ != nullptr) loss = AgreeOnIteration(loss);  // the ranks' mean
  const bool gradients_finite = AllFinite(net_->param_diff(), net_->param_count());
  gradients_overflowed_ = net_->loss_scaling().dynamic && !gradients_finite;  // the step is skipped, not fatal
  if (!gradients_overflowed_ && (!std::isfinite(loss) || !gradients_finite)) StopDiverged(iter_, loss);
  UpdateSmoothedLoss(loss, start_iter);
}

// Queued without waiting; the host reads the device only to display.
void Solver::StepOnGpu(bool display) {
  stepper_->RunPasses(iter_);
  stepper_->RunUpdate(iter_);
  if (ranks_ != nullptr) AgreeOnIteration(0.0f);
  if (display || stepper_->PolledNonFiniteIteration() >= 0) {  // the poll: divergence without a display
    CheckGpuDivergence();
    smoothed_loss_ = stepper_->SmoothedLoss();
  }
  if (display && ranks_ != nullptr) {
    std::vector<double> mean = {smoothed_loss_};
    MeanOverRanks(&mean);
    smoothed_loss_ = static_cast<float>(mean[0]);
  }
}

bool Solver::AdvanceIteration() {
  ++iter_;
  if (param_.snapshot() && iter_ % param_.snapshot() == 0) Snapshot();
  // With ranks, what every rank agreed on this iteration (a signal may reach ranks at different times).
  const bool snapshot_now = ranks_ != nullptr ? snapshot_agreed_ : snapshot_requested_ != 0;
  if (snapshot_now) {
    if (ranks_ == nullptr) snapshot_requested_ = 0;
    snapshot_agreed_ = false;
    Snapshot();
  }
  return ranks_ != nullptr ? stop_agreed_ : stop_requested_ != 0;
}

float Solver::smoothed_loss() { return stepper_ ? stepper_->SmoothedLoss() : smoothed_loss_; }

void Solver::CheckGpuDivergence() {
  if (is_root()) LogGpuSkippedSteps();  // the steps skipped since the last display
  const int first = stepper_->FirstNonFiniteIteration();
  if (first >= 0) StopDiverged(first, stepper_->SmoothedLoss());
}

void Solver::StopDiverged(int iteration, float loss) {
  ctx_.Synchronize();
  std::string where = FindNonFinite(*net_, ctx_);
  if (where.empty()) where = "the gradients overflowed";
  Fail(solver_path_, ": training diverged at iteration ", iteration, " (loss = ", loss, "): ", where,
       ". Try a lower base_lr (now ", param_.base_lr(), ")",
       param_.clip_gradients() < 0 ? " or set clip_gradients" : "");
}

void Solver::UpdateFromCurrentGradients() {
  if (stepper_) {
    stepper_->RunUpdate(iter_);
  } else {
    ApplyUpdate();
  }
}

// CPU nets; on a GPU the GpuStepper's fused kernel does all of this.
void Solver::ApplyUpdate() {
  const float rate = LearningRate(param_, iter_);
  if (param_.display() && iter_ % param_.display() == 0 && is_root())
    LOG(INFO) << "Iteration " << iter_ << ", lr = " << rate;
  FlatParams flat = FlatParamsOf(*net_);
  if (!UnscaleGradients(flat)) return;
  if (param_.clip_gradients() >= 0) ClipGradients(flat, param_.clip_gradients());
  Regularize(flat, param_);
  rule_->Apply(flat, history_, rate, iter_);
}

bool Solver::UnscaleGradients(const FlatParams& flat) {
  const Net::LossScaling& scaling = net_->loss_scaling();
  const float scale = net_->loss_scale();
  if (gradients_overflowed_) {  // dynamic scaling: skip the step, halve the scale
    ++skipped_steps_;
    clean_steps_ = 0;
    const float lower = scale * 0.5f;
    if (is_root())
      LOG(INFO) << "Iteration " << iter_ << ": a gradient overflowed at loss scale " << scale
                << "; step skipped, loss scale now " << lower;
    if (!(lower >= 1.0f / 16777216.0f)) StopDiverged(iter_, std::numeric_limits<float>::infinity());
    net_->SetLossScale(lower);
    return false;
  }
  const int iter_size = std::max(param_.iter_size(), 1);
  const float factor = 1.0f / (static_cast<float>(iter_size) * scale);
  if (factor != 1.0f) cpu_scale(flat.count, factor, flat.diff);
  if (scaling.dynamic && ++clean_steps_ >= scaling.growth_interval) {
    clean_steps_ = 0;
    net_->SetLossScale(scale * 2.0f);
    if (is_root()) LOG(INFO) << "Iteration " << iter_ << ": loss scale now " << scale * 2.0f;
  } else if (scaling.adaptive) {
    // NVIDIA Caffe's rule: K · 4 / (largest gradient magnitude of this step), non-finite values left out.
    float largest = 0;
    for (int64_t i = 0; i < flat.count; ++i) {
      const float g = std::fabs(flat.diff[i]);
      if (std::isfinite(g) && g > largest) largest = g;
    }
    net_->SetLossScale(scaling.factor * (largest > 0 ? 4.0f / largest : 1.0f));
  }
  return true;
}

}  // namespace cortado
