// solver_report.cpp — what a Solver tells a person while it trains: a Step's display lines (the loss and
// speed, the train net's outputs, the data and gradient-exchange waits, the progress and ETA, a GPU
// update's rate and clipping), the tests of the test nets, and their records in the metrics file.
#include "cortado/solver.hpp"

#include <glog/logging.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <sstream>
#include <utility>

#include "cortado/gpu_step.hpp"
#include "cortado/metrics_log.hpp"
#include "cortado/update_rules.hpp"

namespace cortado {

namespace {

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

std::string Duration(double seconds) {
  const long s = std::lround(seconds);
  std::ostringstream out;
  if (s >= 3600) out << s / 3600 << "h" << std::setw(2) << std::setfill('0') << (s % 3600) / 60 << "m";
  else if (s >= 60) out << s / 60 << "m" << std::setw(2) << std::setfill('0') << s % 60 << "s";
  else out << s << "s";
  return out.str();
}

}  // namespace

void Solver::Display(StepMarks* marks) {
  const std::vector<double> outputs = MeanTrainOutputs();
  const double exchange_wait = exchange_wait_seconds();
  if (!is_root()) return;  // rank 0 logs
  const auto now = std::chrono::steady_clock::now();
  const double lapse = std::chrono::duration<double>(now - marks->last_display).count();
  const double per_s = lapse > 0 ? (iter_ - marks->last_display_iter) / lapse : 0.0;
  LOG(INFO) << "Iteration " << iter_ << " (" << per_s << " iter/s, " << lapse << "s/"
            << param_.display() << " iters), loss = " << smoothed_loss_;
  marks->last_display = now;
  marks->last_display_iter = iter_;
  LogTrainOutputs(outputs);
  LogWaits(lapse, exchange_wait, marks);
  if (metrics_) metrics_->Train(iter_, LearningRate(param_, iter_), smoothed_loss_, OutputsOf(*net_, outputs));
  LogProgress(std::chrono::duration<double>(now - marks->start).count(), iter_ - marks->start_iter);
}

// The outputs' means over the ranks (every rank takes part; rank 0 logs).
std::vector<double> Solver::MeanTrainOutputs() {
  std::vector<double> outputs;
  for (int id : net_->output_blob_indices())
    for (const float value : HostValues(ctx_, *net_->blob_by_name(net_->blob_names()[id])))
      outputs.push_back(value);
  MeanOverRanks(&outputs);
  return outputs;
}

void Solver::LogTrainOutputs(const std::vector<double>& outputs) const {
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
}

void Solver::LogWaits(double lapse, double exchange_wait, StepMarks* marks) const {
  const double wait = DataWaitSeconds();
  if (marks->train_has_reader && iter_ > marks->start_iter) {  // not at the first display: it times the warm-up
    LOG(INFO) << "    Data wait: " << std::fixed << std::setprecision(1)
              << 100.0 * (wait - marks->last_data_wait) / lapse << "% of the time ("
              << std::setprecision(3) << wait - marks->last_data_wait << "s of " << lapse << "s)";
  }
  marks->last_data_wait = wait;
  if (exchange_ && iter_ > marks->start_iter) {
    LOG(INFO) << "    Gradient exchange: waited " << std::fixed << std::setprecision(1)
              << 100.0 * (exchange_wait - marks->last_exchange_wait) / lapse << "% of the time ("
              << std::setprecision(3) << exchange_wait - marks->last_exchange_wait << "s of " << lapse << "s)";
  }
  marks->last_exchange_wait = exchange_wait;
}

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

void Solver::LogGpuUpdate() {
  LOG(INFO) << "Iteration " << iter_ << ", lr = " << stepper_->last_rate();
  LogGpuSkippedSteps();
  const float clip = param_.clip_gradients();
  if (clip < 0) return;
  const float norm = stepper_->GradientNorm();
  if (norm > clip)
    LOG(INFO) << "Gradient clipping: scaling down gradients (L2 norm " << norm << " > " << clip
              << ") by scale factor " << clip / norm;
}

// Dynamic loss scaling on a GPU decides on the device; the log says, at each display, what it skipped
// (adaptive scaling never skips).
void Solver::LogGpuSkippedSteps() {
  if (!stepper_->device_loss_scale()) return;
  const GpuStepper::LossScaleState s = stepper_->LossScale();
  if (s.skipped_steps > skipped_steps_)
    LOG(INFO) << "Iteration " << iter_ << ": " << s.skipped_steps - skipped_steps_ << " step(s) skipped since the "
              << "last display, a gradient having overflowed (the last at iteration " << s.last_skipped
              << "); loss scale now " << s.scale;
  skipped_steps_ = s.skipped_steps;
}

double Solver::DataWaitSeconds() const {
  double seconds = 0;
  for (const auto& layer : net_->layers()) seconds += layer->reader_wait_seconds();
  return seconds;
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

}  // namespace cortado
