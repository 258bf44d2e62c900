// solver.cpp — the training loop: nets and memory at setup, then iterations of test / forward-backward
// / display / update / snapshot, with Caffe's log lines. On a GPU context a GpuStepper queues each
// step without waiting (gpu_step.hpp); the host reads the device only to display (loss, divergence,
// outputs, clipping), to test and to snapshot.
#include "cortado/solver.hpp"

#include <glog/logging.h>

#include <unistd.h>  // access

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iomanip>
#include <set>
#include <sstream>

#include "cortado/batch_pipeline.hpp"  // RecordSeed
#include "cortado/divergence.hpp"
#include "cortado/error.hpp"
#include "cortado/gpu.hpp"
#include "cortado/gpu_step.hpp"
#include "cortado/hdf5.hpp"
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

// The values of a blob of ctx's net on the host (GPU blobs: after the queued work, through a copy).
std::vector<float> HostValues(Context& ctx, const Blob& blob) {
  if (blob.device() == Device::kGPU) {
    ctx.Synchronize();
    return blob.ReadData();
  }
  return std::vector<float>(blob.data(), blob.data() + blob.count());
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

// The outputs of `net` as the metrics file lists them: each output blob's name with its values, taken
// in order from `flat` (every output's values one after another, as the log lines number them).
template <typename Value>
std::vector<MetricsLog::Output> OutputsOf(const Net& net, const std::vector<Value>& flat) {
  std::vector<MetricsLog::Output> outputs;
  size_t k = 0;
  for (size_t o = 0; o < net.output_blobs().size(); ++o) {
    MetricsLog::Output output{net.blob_names()[net.output_blob_indices()[o]], {}};
    for (int64_t j = 0; j < net.output_blobs()[o]->count() && k < flat.size(); ++j)
      output.values.push_back(static_cast<float>(flat[k++]));
    outputs.push_back(std::move(output));
  }
  return outputs;
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
  if (!param_.memory_reuse()) net_param.set_memory_reuse(false);
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
    if (!param_.memory_reuse()) net_param.set_memory_reuse(false);
    test_nets_.push_back(std::make_unique<Net>(net_param, ctx_, sources[i].first));
    test_nets_.back()->ShareTrainedLayersWith(net_.get());
  }
  last_test_scores_.resize(n);
}

// test_interval with a net that has TEST-phase layers but no test_iter: Caffe builds no test net and
// never tests, silently. Say so instead.
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

// Snapshots go to snapshot_prefix's directory (the solver's own when there is no prefix): a directory
// that is missing or not writable is reported now, not after the training.
void Solver::CheckSnapshotDirectory() const {
  const std::filesystem::path prefix(SnapshotFilename(""));
  std::filesystem::path dir = prefix.parent_path();
  if (dir.empty()) dir = ".";
  const std::string where = param_.snapshot_prefix().empty()
                                ? "snapshots go beside the solver (no snapshot_prefix), in '" + dir.string() + "'"
                                : "snapshot_prefix '" + param_.snapshot_prefix() + "'";
  std::error_code ec;
  CORTADO_REQUIRE(std::filesystem::is_directory(dir, ec), solver_path_, ": ", where, ": directory '", dir.string(),
                  "' does not exist; create it first");
  CORTADO_REQUIRE(::access(dir.c_str(), W_OK | X_OK) == 0, solver_path_, ": ", where, ": cannot write in directory '",
                  dir.string(), "': ", std::strerror(errno));
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
  const int start_iter = iter_;
  const int stop_iter = iter_ + iters;
  losses_.clear();
  smoothed_loss_ = 0;
  if (stepper_) stepper_->ResetLossAverage();
  const auto step_start = std::chrono::steady_clock::now();
  auto last_display = step_start;
  int last_display_iter = iter_;
  double last_display_wait = DataWaitSeconds();
  bool train_has_reader = false;
  for (const auto& layer : net_->layers()) train_has_reader |= layer->HasReader();
  const int iter_size = std::max(param_.iter_size(), 1);
  stopped_early_ = false;
  if (ranks_ != nullptr && !exchange_ && iter_ < stop_iter) JoinRanks();
  double last_display_exchange = exchange_wait_seconds();
  while (iter_ < stop_iter) {
    if (param_.test_interval() && iter_ % param_.test_interval() == 0 &&
        (iter_ > 0 || param_.test_initialization()) && is_root()) {
      TestAll();
    }
    const bool display = param_.display() && iter_ % param_.display() == 0;
    if (stepper_) {  // queued without waiting; the host reads the device only to display
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
    } else {
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
      if (!std::isfinite(loss) || !AllFinite(net_->param_diff(), net_->param_count())) StopDiverged(iter_, loss);
      UpdateSmoothedLoss(loss, start_iter);
    }
    if (display) {
      // The outputs' means over the ranks (every rank takes part; rank 0 logs).
      std::vector<double> outputs;
      for (int id : net_->output_blob_indices())
        for (const float value : HostValues(ctx_, *net_->blob_by_name(net_->blob_names()[id])))
          outputs.push_back(value);
      MeanOverRanks(&outputs);
      const double exchange_wait = exchange_wait_seconds();
      if (is_root()) {  // the log lines
        const auto now = std::chrono::steady_clock::now();
        const double lapse = std::chrono::duration<double>(now - last_display).count();
        const double per_s = lapse > 0 ? (iter_ - last_display_iter) / lapse : 0.0;
        LOG(INFO) << "Iteration " << iter_ << " (" << per_s << " iter/s, " << lapse << "s/"
                  << param_.display() << " iters), loss = " << smoothed_loss_;
        last_display = now;
        last_display_iter = iter_;
        int score_index = 0;
        for (int id : net_->output_blob_indices()) {
          const int64_t count = net_->blob_by_name(net_->blob_names()[id])->count();
          const float weight = net_->blob_loss_weights()[id];
          for (int64_t k = 0; k < count; ++k) {
            const float value = static_cast<float>(outputs[score_index]);
            std::ostringstream loss_msg;
            if (weight != 0) loss_msg << " (* " << weight << " = " << weight * value << " loss)";
            LOG(INFO) << "    Train net output #" << score_index++ << ": " << net_->blob_names()[id]
                      << " = " << value << loss_msg.str();
          }
        }
        const double wait = DataWaitSeconds();
        if (train_has_reader && iter_ > start_iter) {  // not at the first display: it times the warm-up
          LOG(INFO) << "    Data wait: " << std::fixed << std::setprecision(1)
                    << 100.0 * (wait - last_display_wait) / lapse << "% of the time ("
                    << std::setprecision(3) << wait - last_display_wait << "s of " << lapse << "s)";
        }
        last_display_wait = wait;
        if (exchange_ && iter_ > start_iter) {
          LOG(INFO) << "    Gradient exchange: waited " << std::fixed << std::setprecision(1)
                    << 100.0 * (exchange_wait - last_display_exchange) / lapse << "% of the time ("
                    << std::setprecision(3) << exchange_wait - last_display_exchange << "s of " << lapse << "s)";
        }
        last_display_exchange = exchange_wait;
        if (metrics_) metrics_->Train(iter_, LearningRate(param_, iter_), smoothed_loss_, OutputsOf(*net_, outputs));
        LogProgress(std::chrono::duration<double>(now - step_start).count(), iter_ - start_iter);
      }
    }
    if (stepper_) {
      if (display && is_root()) LogGpuUpdate();
    } else {
      ApplyUpdate();
    }
    ++iter_;
    if (param_.snapshot() && iter_ % param_.snapshot() == 0) Snapshot();
    // With ranks, what every rank agreed on this iteration (a signal may reach ranks at different times).
    const bool snapshot_now = ranks_ != nullptr ? snapshot_agreed_ : snapshot_requested_ != 0;
    if (snapshot_now) {
      if (ranks_ == nullptr) snapshot_requested_ = 0;
      snapshot_agreed_ = false;
      Snapshot();
    }
    if (ranks_ != nullptr ? stop_agreed_ : stop_requested_ != 0) {
      stopped_early_ = true;
      break;
    }
  }
  if (stepper_) CheckGpuDivergence();
}

float Solver::smoothed_loss() { return stepper_ ? stepper_->SmoothedLoss() : smoothed_loss_; }

void Solver::LogGpuUpdate() {
  LOG(INFO) << "Iteration " << iter_ << ", lr = " << stepper_->last_rate();
  const float clip = param_.clip_gradients();
  if (clip < 0) return;
  const float norm = stepper_->GradientNorm();
  if (norm > clip)
    LOG(INFO) << "Gradient clipping: scaling down gradients (L2 norm " << norm << " > " << clip
              << ") by scale factor " << clip / norm;
}

void Solver::CheckGpuDivergence() {
  const int first = stepper_->FirstNonFiniteIteration();
  if (first >= 0) StopDiverged(first, stepper_->SmoothedLoss());
}

namespace {

std::string Duration(double seconds) {
  const long s = std::lround(seconds);
  std::ostringstream out;
  if (s >= 3600) out << s / 3600 << "h" << std::setw(2) << std::setfill('0') << (s % 3600) / 60 << "m";
  else if (s >= 60) out << s / 60 << "m" << std::setw(2) << std::setfill('0') << s % 60 << "s";
  else out << s << "s";
  return out.str();
}

}  // namespace

void Solver::LogProgress(double elapsed_s, int iters_done) const {
  const int max_iter = std::max(param_.max_iter(), 1);
  std::ostringstream line;
  line << "    Progress: " << iter_ << "/" << param_.max_iter() << " iterations ("
       << std::fixed << std::setprecision(1) << 100.0 * iter_ / max_iter << "%)";
  if (iters_done > 0) {
    line << ", ETA " << Duration(elapsed_s / iters_done * std::max(param_.max_iter() - iter_, 0));
  }
  LOG(INFO) << line.str();
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
  const int iter_size = std::max(param_.iter_size(), 1);
  if (iter_size > 1) cpu_scale(flat.count, 1.0f / iter_size, flat.diff);
  if (param_.clip_gradients() >= 0) ClipGradients(flat, param_.clip_gradients());
  Regularize(flat, param_);
  rule_->Apply(flat, history_, rate, iter_);
}

void Solver::TestAll() {
  for (size_t i = 0; i < test_nets_.size(); ++i) Test(static_cast<int>(i));
}

void Solver::Test(int id) {
  LOG(INFO) << "Iteration " << iter_ << ", Testing net (#" << id << ")";
  Net& net = *test_nets_[id];
  std::vector<double> scores;
  double loss = 0;
  const int iterations = param_.test_iter(id);
  for (int i = 0; i < iterations; ++i) {
    const float iter_loss = net.Forward();
    if (param_.test_compute_loss()) loss += iter_loss;
    size_t k = 0;
    for (const Blob* blob : net.output_blobs()) {
      for (const float value : HostValues(ctx_, *blob)) {
        if (scores.size() <= k) scores.push_back(0.0);
        scores[k++] += value;
      }
    }
  }
  if (param_.test_compute_loss()) LOG(INFO) << "Test loss: " << loss / iterations;
  last_test_scores_[id].clear();
  size_t k = 0;
  for (size_t o = 0; o < net.output_blobs().size(); ++o) {
    const int blob_id = net.output_blob_indices()[o];
    const float weight = net.blob_loss_weights()[blob_id];
    for (int64_t j = 0; j < net.output_blobs()[o]->count(); ++j, ++k) {
      const float mean = static_cast<float>(scores[k] / iterations);
      last_test_scores_[id].push_back(mean);
      std::ostringstream loss_msg;
      if (weight != 0) loss_msg << " (* " << weight << " = " << weight * mean << " loss)";
      LOG(INFO) << "    Test net output #" << k << ": " << net.blob_names()[blob_id] << " = " << mean
                << loss_msg.str();
    }
  }
  if (metrics_) metrics_->Test(iter_, id, LearningRate(param_, iter_), OutputsOf(net, last_test_scores_[id]));
}

std::string Solver::SnapshotPrefix() const {
  if (!param_.snapshot_prefix().empty()) return param_.snapshot_prefix();
  const std::filesystem::path p(solver_path_);
  return (p.parent_path() / p.stem()).string();
}

std::string Solver::SnapshotFilename(const std::string& extension) const {
  return SnapshotPrefix() + "_iter_" + std::to_string(iter_) + extension;
}

std::string Solver::Snapshot() {
  if (stepper_) CheckGpuDivergence();  // a snapshot never holds diverged weights
  std::string rank_rng_states;  // data parallel: every rank's generator, one per line, on rank 0
  if (ranks_ != nullptr) {
    for (const std::string& rank_state : ranks_->GatherOnRoot(ctx_.SaveRngState()))
      rank_rng_states += rank_state + "\n";
    if (!is_root()) return "";
  }
  // Caffe's two formats: binary protos, or the same messages in its HDF5 layout (hdf5.hpp).
  const bool hdf5 = param_.snapshot_format() == SolverParameter::HDF5;
  const char* format = hdf5 ? "HDF5 file " : "binary proto file ";
  const std::string model = SnapshotFilename(hdf5 ? ".caffemodel.h5" : ".caffemodel");
  LOG(INFO) << "Snapshotting to " << format << model;
  ctx_.Synchronize();  // a GPU's last update may still be running: the copies below read its results
  NetParameter net_param;
  net_->ToProto(&net_param, param_.snapshot_diff());
  if (hdf5) {
    WriteNetParameterToHdf5(net_param, model);
  } else {
    WriteProtoToBinaryFile(net_param, model);
  }

  const std::string state_path = SnapshotFilename(hdf5 ? ".solverstate.h5" : ".solverstate");
  LOG(INFO) << "Snapshotting solver state to " << format << state_path;
  SolverState state;
  state.set_iter(iter_);
  state.set_learned_net(model);
  state.set_current_step(CurrentStep(param_, std::max(iter_ - 1, 0)));
  // History, one BlobProto per learnable parameter, buffer by buffer (a GPU's through a host copy).
  std::vector<float> host;
  for (float* h : history_) {
    if (ctx_.device() == Device::kGPU) {
      host.resize(static_cast<size_t>(net_->param_count()));
      gpu_download(ctx_, net_->param_count(), h, host.data());
      h = host.data();
    }
    int64_t offset = 0;
    for (const Blob* p : net_->learnable_params()) {
      BlobProto* proto = state.add_history();
      for (int d : p->shape()) proto->mutable_shape()->add_dim(d);
      proto->mutable_data()->Add(h + offset, h + offset + p->count());
      offset += p->count();
    }
  }
  state.set_rng_state(ctx_.SaveRngState());
  if (ranks_ != nullptr) {
    state.set_ranks(ranks_->size());
    state.set_rank_rng_states(rank_rng_states);
  }
  for (const Layer* reader : Readers()) {
    state.add_reader_position(reader->reader_state().position);
    state.add_reader_seed(reader->reader_state().seed);
  }
  if (hdf5) {
    WriteSolverStateToHdf5(state, state_path);
  } else {
    WriteProtoToBinaryFile(state, state_path);
  }
  return state_path;
}

void Solver::Restore(const std::string& path) {
  ctx_.Synchronize();  // nothing queued on a GPU may still write what is about to be replaced
  SolverState state;
  if (IsHdf5Path(path)) {
    state = ReadSolverStateFromHdf5(path);
  } else {
    ReadProtoFromBinaryFile(path, &state);
  }
  CORTADO_REQUIRE(state.iter() >= 0, path, ": iter is ", state.iter(), "; a snapshot's iteration is never negative "
                  "(a damaged or hand-edited solver state?)");
  iter_ = state.iter();
  if (state.has_learned_net()) {
    std::string model = state.learned_net();
    // A relative model path is tried as written, then beside the solverstate.
    if (!FileExists(model)) {
      const auto beside = std::filesystem::path(path).parent_path() / std::filesystem::path(model).filename();
      if (FileExists(beside.string())) model = beside.string();
    }
    net_->CopyTrainedLayersFrom(model);
  }
  const int expected = static_cast<int>(net_->learnable_params().size()) * rule_->num_history();
  CORTADO_REQUIRE(state.history_size() == expected, path, ": holds ", state.history_size(),
                  " history blobs but this ", rule_->type(), " solver on this net needs ", expected);
  int index = 0;
  std::vector<float> host;  // a GPU's history is assembled here, then copied
  for (float* h : history_) {
    float* target = h;
    if (ctx_.device() == Device::kGPU) {
      host.assign(static_cast<size_t>(net_->param_count()), 0.0f);
      target = host.data();
    }
    int64_t offset = 0;
    for (const Blob* p : net_->learnable_params()) {
      const BlobProto& proto = state.history(index++);
      CORTADO_REQUIRE(proto.data_size() == p->count(), path, ": history blob ", index - 1, " holds ",
                      proto.data_size(), " values but its parameter has ", p->count());
      std::copy(proto.data().begin(), proto.data().end(), target + offset);
      offset += p->count();
    }
    if (ctx_.device() == Device::kGPU) gpu_upload(ctx_, net_->param_count(), host.data(), h);
  }
  if (state.has_rng_state()) ctx_.RestoreRngState(state.rng_state());
  RestoreRankRng(state, path);
  RestoreReaders(state, path);
}

// Data parallel: each rank takes its own generator back from a snapshot of as many ranks. The reader
// positions count every rank's records, so the data goes on exactly with any number of ranks.
void Solver::RestoreRankRng(const SolverState& state, const std::string& path) {
  const int ranks = ranks_ != nullptr ? ranks_->size() : 1;
  const int saved = state.has_ranks() ? state.ranks() : 1;
  if (saved == ranks) {
    if (ranks_ == nullptr) return;  // rng_state was rank 0's
    std::vector<std::string> lines;
    std::istringstream in(state.rank_rng_states());
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    CORTADO_REQUIRE(static_cast<int>(lines.size()) == ranks, path, ": holds ", lines.size(),
                    " rank generator states for ", ranks, " ranks");
    ctx_.RestoreRngState(lines[ranks_->rank()]);
    return;
  }
  LOG_IF(WARNING, is_root()) << path << " was written by " << saved << " rank" << (saved == 1 ? "" : "s")
                             << " and this run has " << ranks << ": the data goes on where it stood, but random "
                             << "draws after the data (dropout) differ from an uninterrupted run";
  if (ranks_ != nullptr && ranks_->rank() > 0)
    ctx_.Reseed(static_cast<int64_t>(RecordSeed(param_.random_seed() + state.iter(), ranks_->rank()) >> 1));
}

double Solver::DataWaitSeconds() const {
  double seconds = 0;
  for (const auto& layer : net_->layers()) seconds += layer->reader_wait_seconds();
  return seconds;
}

std::vector<Layer*> Solver::Readers() const {
  std::vector<Layer*> readers;
  auto collect = [&readers](const Net& net) {
    for (const auto& layer : net.layers())
      if (layer->HasReader()) readers.push_back(layer.get());
  };
  collect(*net_);
  for (const auto& test_net : test_nets_) collect(*test_net);
  return readers;
}

void Solver::RestoreReaders(const SolverState& state, const std::string& path) {
  const std::vector<Layer*> readers = Readers();
  if (readers.empty()) return;
  const int saved = state.reader_position_size();
  if (saved == 0) {
    LOG(WARNING) << path << " holds no data-reader positions (a Caffe solver state?): the data "
                 << "restarts from the beginning of each dataset";
    return;
  }
  if (saved != static_cast<int>(readers.size()) || state.reader_seed_size() != saved) {
    LOG(WARNING) << path << " holds positions for " << saved << " data readers but these nets have "
                 << readers.size() << ": the data restarts from the beginning of each dataset";
    return;
  }
  for (int i = 0; i < saved; ++i)
    readers[i]->RestoreReaderState({state.reader_position(i), state.reader_seed(i)});
}

}  // namespace cortado
