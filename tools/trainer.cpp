// trainer.cpp — the command line, in Caffe's shape:
//   trainer train --solver=S [--weights=a.caffemodel[,b...] | --snapshot=X.solverstate]
//   trainer test --model=M --weights=W [--iterations=50]
//   trainer time --model=M [--iterations=50] [--phase=TRAIN|TEST]
//   trainer device_query
// A user's mistake ends with one line on stderr and exit code 1 (see tool.hpp).
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <chrono>
#include <csignal>
#include <iomanip>
#include <map>
#include <sstream>
#include <string>

#include "cortado/error.hpp"
#include "cortado/gpu.hpp"
#include "cortado/io.hpp"
#include "cortado/solver.hpp"
#include "cortado/tool.hpp"

DEFINE_string(solver, "", "The solver prototxt (train)");
DEFINE_string(model, "", "The net prototxt (test, time)");
DEFINE_string(weights, "", "Comma-separated .caffemodel files: fine-tune from them (train) or test them (test)");
DEFINE_string(snapshot, "", "A .solverstate to resume training from");
DEFINE_int32(iterations, 50, "Iterations to run (test, time)");
DEFINE_string(phase, "TRAIN", "Net phase for time: TRAIN or TEST");
DEFINE_int32(level, 0, "Net state level, for include/exclude rules");
DEFINE_string(stage, "", "Comma-separated net state stages, for include/exclude rules");
DEFINE_string(gpu, "", "GPU ids to use (the GPU path is not implemented yet: nets run on the CPU)");
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

cortado::NetState StateFromFlags(cortado::Phase phase) {
  cortado::NetState state;
  state.set_phase(phase);
  state.set_level(FLAGS_level);
  for (const auto& stage : SplitCommas(FLAGS_stage)) state.add_stage(stage);
  return state;
}

// ---- signals -------------------------------------------------------------------------------------

cortado::Solver* g_solver = nullptr;
std::string g_sigint_effect, g_sighup_effect;

void ApplyEffect(const std::string& effect) {
  if (g_solver == nullptr) return;
  if (effect == "stop") g_solver->RequestStop();
  if (effect == "snapshot") g_solver->RequestSnapshot();
}

void OnSignal(int signal) { ApplyEffect(signal == SIGHUP ? g_sighup_effect : g_sigint_effect); }

void CheckEffect(const std::string& flag, const std::string& value) {
  CORTADO_REQUIRE(value == "stop" || value == "snapshot" || value == "none", "--", flag, "=", value,
                  " is not valid (choose stop, snapshot or none)");
}

void InstallSignalHandlers(cortado::Solver* solver) {
  CheckEffect("sigint_effect", FLAGS_sigint_effect);
  CheckEffect("sighup_effect", FLAGS_sighup_effect);
  g_solver = solver;
  g_sigint_effect = FLAGS_sigint_effect;
  g_sighup_effect = FLAGS_sighup_effect;
  struct sigaction action {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGHUP, &action, nullptr);
}

// ---- commands ------------------------------------------------------------------------------------

int Train() {
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
  cortado::Solver solver(param, FLAGS_solver);
  for (const auto& w : weights) {
    LOG(INFO) << "Finetuning from " << w;
    solver.net()->CopyTrainedLayersFrom(w);
  }
  InstallSignalHandlers(&solver);
  solver.Solve(FLAGS_snapshot);
  g_solver = nullptr;
  return 0;
}

int Test() {
  CORTADO_REQUIRE(!FLAGS_model.empty(), "test needs --model=NET.prototxt");
  CORTADO_REQUIRE(!FLAGS_weights.empty(), "test needs --weights=MODEL.caffemodel");
  CORTADO_REQUIRE(FLAGS_iterations > 0, "--iterations must be positive");
  cortado::NetParameter param;
  cortado::ReadProtoFromTextFile(FLAGS_model, &param);
  *param.mutable_state() = StateFromFlags(cortado::TEST);
  cortado::Context ctx(cortado::Device::kCPU);
  cortado::Net net(param, ctx, FLAGS_model);
  net.AllocateOwnArena();
  for (const auto& w : SplitCommas(FLAGS_weights)) net.CopyTrainedLayersFrom(w);
  LOG(INFO) << "Running for " << FLAGS_iterations << " iterations.";
  std::vector<double> scores;
  double loss = 0;
  for (int i = 0; i < FLAGS_iterations; ++i) {
    loss += net.Forward();
    size_t k = 0;
    for (size_t o = 0; o < net.output_blobs().size(); ++o) {
      const cortado::Blob* blob = net.output_blobs()[o];
      const std::string& name = net.blob_names()[net.output_blob_indices()[o]];
      for (int64_t j = 0; j < blob->count(); ++j, ++k) {
        if (scores.size() <= k) scores.push_back(0.0);
        scores[k] += blob->data()[j];
        LOG(INFO) << "Batch " << i << ", " << name << " = " << blob->data()[j];
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

int Time() {
  CORTADO_REQUIRE(!FLAGS_model.empty(), "time needs --model=NET.prototxt");
  CORTADO_REQUIRE(FLAGS_iterations > 0, "--iterations must be positive");
  cortado::Phase phase;
  CORTADO_REQUIRE(cortado::Phase_Parse(FLAGS_phase, &phase), "--phase=", FLAGS_phase,
                  " is not valid (choose TRAIN or TEST)");
  cortado::NetParameter param;
  cortado::ReadProtoFromTextFile(FLAGS_model, &param);
  *param.mutable_state() = StateFromFlags(phase);
  cortado::Context ctx(cortado::Device::kCPU);
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
  std::vector<double> forward_ms(layers.size(), 0.0), backward_ms(layers.size(), 0.0);
  double forward_total = 0, backward_total = 0;
  LOG(INFO) << "*** Benchmark begins ***";
  LOG(INFO) << "Testing for " << FLAGS_iterations << " iterations.";
  const auto start = Clock::now();
  for (int it = 0; it < FLAGS_iterations; ++it) {
    const auto iter_start = Clock::now();
    for (size_t i = 0; i < layers.size(); ++i) {
      const auto t = Clock::now();
      layers[i]->Forward(net.bottom_vecs()[i], net.top_vecs()[i]);
      forward_ms[i] += ms_since(t);
    }
    forward_total += ms_since(iter_start);
    const auto back_start = Clock::now();
    if (backward) {
      for (size_t i = layers.size(); i-- > 0;) {
        const auto t = Clock::now();
        if (net.layer_need_backward()[i])
          layers[i]->Backward(net.top_vecs()[i], net.bottom_need_backward()[i], net.bottom_vecs()[i]);
        backward_ms[i] += ms_since(t);
      }
    }
    backward_total += ms_since(back_start);
    LOG(INFO) << "Iteration: " << it + 1 << " forward-backward time: " << ms_since(iter_start) << " ms.";
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
  return 0;
}

int DeviceQuery() {
  const int count = cortado::GpuCount();
  if (!cortado::BuiltWithCuda()) Fail("this build of Cortado has no GPU support (rebuild with CUDA)");
  CORTADO_REQUIRE(count > 0, "no GPU found");
  LOG(INFO) << "GPUs found: " << count;
  return 0;
}

const char* kUsage =
    "trainer: trains, tests and times nets written in Caffe's prototxt format\n"
    "usage: trainer <command> <args>\n\n"
    "commands:\n"
    "  train           train or finetune a model\n"
    "  test            score a model\n"
    "  time            benchmark model execution time\n"
    "  device_query    show GPU diagnostic information\n";

}  // namespace

int main(int argc, char** argv) {
  return cortado::RunTool(argc, argv, kUsage, [&](int argc, char** argv) {
    const std::map<std::string, int (*)()> commands = {
        {"train", Train}, {"test", Test}, {"time", Time}, {"device_query", DeviceQuery}};
    CORTADO_REQUIRE(argc >= 2, "no command given (valid commands: train, test, time, device_query; "
                    "see trainer --help)");
    CORTADO_REQUIRE(argc == 2, "unexpected argument '", argv[2], "' (flags are written --name=value; "
                    "see trainer --help)");
    auto it = commands.find(argv[1]);
    if (it == commands.end())
      Fail("unknown command '", argv[1], "' (valid commands: train, test, time, device_query)");
    return it->second();
  });
}
