// time.cpp — trainer time: the forward and backward time of each layer of --model, and of the passes,
// over --iterations (a GPU's measured on its stream); --output also writes them to a .csv or .json
// file, and --plan_only prints the memory plan instead. Layers the net runs fused (net.hpp) are timed as
// one: forward at the chain's first layer, backward at its last.
#include <glog/logging.h>

#include <chrono>
#include <filesystem>
#include <iomanip>
#include <memory>
#include <string>
#include <vector>

#include "cortado/batch_size.hpp"
#include "cortado/error.hpp"
#include "cortado/io.hpp"
#include "cortado/memory.hpp"
#include "cortado/net.hpp"
#include "cortado/solver.hpp"  // GpuTimeline
#include "cortado/time_report.hpp"
#include "trainer.hpp"

namespace trainer {

namespace {

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

}  // namespace

int Time() {
  CORTADO_REQUIRE(!FLAGS_model.empty(), "time needs --model=NET.prototxt");
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
      net.ForwardLayer(i);  // a fused chain's time falls to its first layer
      clock.Mark(i + 1);
    }
    clock.Mark(n + 1);
    if (backward) {
      for (int i = n - 1; i >= 0; --i) {
        net.BackwardLayer(i);  // a fused chain's time falls to its last layer
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

}  // namespace trainer
