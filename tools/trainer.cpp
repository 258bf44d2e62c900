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
// train and time are in trainer_commands/ (train.cpp, time.cpp), with what the files share (trainer.hpp).
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cortado/batch_size.hpp"
#include "cortado/cpu_engine.hpp"
#include "cortado/error.hpp"
#include "cortado/gpu.hpp"
#include "cortado/hdf5.hpp"  // IsHdf5Path
#include "cortado/io.hpp"
#include "cortado/solver.hpp"
#include "cortado/tool.hpp"
#include "cortado/upgrade.hpp"
#include "trainer_commands/trainer.hpp"

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
DEFINE_bool(fuse, true, "Run chains of layers that run faster as one (BatchNorm, Scale, ReLU) fused, each layer keeping "
            "its blobs (as the solver and net field fuse); --fuse=false runs every layer on its own");
DEFINE_string(precision, "", "train, test, time: the nets' storage type, fp32, bf16 or fp16 (as the solver field "
              "precision; fp16 scales the loss dynamically); empty: each net's own default_forward_type and "
              "default_backward_type");
DEFINE_string(layout, "", "train, test, time: the nets' image layout, nchw or nhwc (as the solver field layout; nhwc "
              "runs channels-last the layers that can); empty: each net's own layout field");
DEFINE_bool(metrics, true, "train: write <snapshot prefix>_metrics.jsonl beside the snapshots, one JSON object per "
            "display and test (--metrics=false: as the solver field write_metrics: false)");
DEFINE_bool(plan_only, false, "train, time: print the memory plan of the nets (on --gpu's device, which need not be "
            "present) and exit without allocating or running anything");
DEFINE_string(max_memory, "", "With --plan_only: also find the largest batch whose plan fits in this many bytes "
              "(suffixes K, M, G, T are powers of 1000, Ki, Mi, Gi, Ti of 1024; e.g. 80G)");
DEFINE_int32(batch_size, 0, "train, test, time: the batch of every data and input layer, instead of the prototxt's");
DEFINE_string(sigint_effect, "stop", "On SIGINT or SIGTERM during training: stop (snapshot and exit), snapshot, or none");
DEFINE_string(sighup_effect, "snapshot", "On SIGHUP during training: snapshot, stop, or none");

namespace trainer {

// ---- the flags' helpers (what each does: trainer_commands/trainer.hpp) -------------------------------

std::vector<std::string> SplitCommas(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

std::vector<int> GpuIdsFromFlag() {
  std::vector<int> ids;
  if (FLAGS_gpu.empty()) return ids;
  if (FLAGS_gpu == "all") {
    for (int id = 0; id < std::max(cortado::GpuCount(), 1); ++id) ids.push_back(id);
    return ids;
  }
  const std::string& text = FLAGS_gpu;
  CORTADO_REQUIRE(text.find(",,") == std::string::npos && text.front() != ',' && text.back() != ',', "--gpu=", text,
                  " has an empty entry (give a GPU id such as 0, a list such as 0,1, or all)");
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

int GpuFromFlag() {
  const std::vector<int> ids = GpuIdsFromFlag();
  if (ids.empty()) return -1;
  if (ids.size() > 1 && cortado::GpuCount() > 0)
    LOG(WARNING) << "--gpu=" << FLAGS_gpu << ": test and time run on one GPU; using GPU " << ids[0];
  return ids[0];
}

void ApplyGpuFlags(cortado::SolverParameter* param) {
  if (FLAGS_strict_fp32) param->set_strict_fp32(true);
  if (FLAGS_deterministic) param->set_deterministic(true);
  if (FLAGS_cudnn_workspace_limit_mb >= 0) param->set_cudnn_workspace_limit_mb(FLAGS_cudnn_workspace_limit_mb);
}

cortado::GpuSettings GpuSettingsFromFlags() {
  cortado::SolverParameter defaults;
  ApplyGpuFlags(&defaults);
  return cortado::GpuSettingsOf(defaults, "the command line");
}

std::unique_ptr<cortado::Context> ContextFromFlags() {
  const auto [device, gpu] = cortado::DeviceForGpuFlag(GpuFromFlag(), FLAGS_gpu);  // else the CPU, saying so
  auto ctx = std::make_unique<cortado::Context>(device, -1, gpu);
  if (device == cortado::Device::kGPU) {
    ctx->SetGpuSettings(GpuSettingsFromFlags());
    cortado::LogGpuSettings(*ctx);
  }
  return ctx;
}

void ApplyNetFlags(cortado::NetParameter* param) {
  if (FLAGS_batch_size > 0) {
    CORTADO_REQUIRE(cortado::SetBatchSize(param, FLAGS_batch_size) > 0, "--batch_size: ", FLAGS_model,
                    " has no data or input layer whose batch could be set");
  }
  if (!FLAGS_memory_reuse) param->set_memory_reuse(false);
  if (!FLAGS_fuse) param->set_fuse(false);
  if (!FLAGS_precision.empty()) cortado::SetNetPrecision(param, PrecisionFromFlag());
  if (!FLAGS_layout.empty()) param->set_layout(LayoutFromFlag());
}

cortado::Packing LayoutFromFlag() {
  if (FLAGS_layout == "nchw" || FLAGS_layout == "NCHW") return cortado::NCHW;
  if (FLAGS_layout == "nhwc" || FLAGS_layout == "NHWC") return cortado::NHWC;
  cortado::Fail("--layout=", FLAGS_layout, ": give nchw or nhwc");
}

cortado::Type PrecisionFromFlag() {
  if (FLAGS_precision == "fp32" || FLAGS_precision == "float") return cortado::FLOAT;
  if (FLAGS_precision == "bf16" || FLAGS_precision == "bfloat16") return cortado::BFLOAT16;
  if (FLAGS_precision == "fp16" || FLAGS_precision == "half") return cortado::FLOAT16;
  cortado::Fail("--precision=", FLAGS_precision, ": give fp32, bf16 or fp16");
}

cortado::NetState StateFromFlags(cortado::Phase phase) {
  cortado::NetState state;
  state.set_phase(phase);
  state.set_level(FLAGS_level);
  for (const auto& stage : SplitCommas(FLAGS_stage)) state.add_stage(stage);
  return state;
}

// ---- memory plans (--plan_only) --------------------------------------------------------------------

int PrintPlan(const std::function<size_t(int, std::string*)>& plan_at, const std::string& device) {
  const size_t limit = FLAGS_max_memory.empty() ? 0 : cortado::BytesFromText(FLAGS_max_memory, "--max_memory");
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

// ---- commands ------------------------------------------------------------------------------------

namespace {

using cortado::Fail;

int Test() {
  CORTADO_REQUIRE(!FLAGS_model.empty(), "test needs --model=NET.prototxt");
  CORTADO_REQUIRE(!FLAGS_weights.empty(), "test needs --weights=MODEL.caffemodel");
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
      for (const float value : cortado::HostValues(ctx, *net.output_blobs()[o])) {
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
  CORTADO_REQUIRE(!cortado::IsHdf5Path(FLAGS_model), FLAGS_model, ": HDF5 weights are always in the current "
                  "format; upgrade reads a prototxt or a binary .caffemodel");
  const bool binary = cortado::PathEndsWith(FLAGS_model, ".caffemodel");
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

// Which commands read each flag, and the values each may take (tool.hpp: the same rule for every flag).
std::vector<cortado::FlagRule> FlagRules() {
  const std::vector<std::string> run = {"train", "test", "time"};
  const std::vector<std::string> compute = {"train", "test", "time", "device_query"};
  using Rule = cortado::FlagRule;
  auto caffe = [](Rule rule) {
    rule.caffe = true;
    return rule;
  };
  const double inf = std::numeric_limits<double>::infinity();
  return {caffe({"solver", -inf, inf, false, {"train"}}),
          caffe({"model", -inf, inf, false, {"test", "time", "upgrade"}}),
          {"output", -inf, inf, false, {"time", "upgrade"}},
          caffe({"weights", -inf, inf, false, {"train", "test"}}),
          caffe({"snapshot", -inf, inf, false, {"train"}}),
          caffe({"iterations", 1, inf, false, {"test", "time"}}),
          caffe({"phase", -inf, inf, false, {"time"}}),
          caffe({"level", -inf, inf, false, run}),
          caffe({"stage", -inf, inf, false, run}),
          caffe({"gpu", -inf, inf, false, compute}),
          caffe({"sigint_effect", -inf, inf, false, {"train"}}),
          caffe({"sighup_effect", -inf, inf, false, {"train"}}),
          {"cpu_engine", -inf, inf, false, compute},
          {"threads", 0, 65536, false, compute},
          {"exchange_bucket_mb", 0, 1 << 20, true, {"train"}},
          {"cuda_graph", -inf, inf, false, {"train"}},
          {"strict_fp32", -inf, inf, false, run},
          {"deterministic", -inf, inf, false, run},
          {"cudnn_workspace_limit_mb", 0, 1 << 20, false, run},
          {"memory_reuse", -inf, inf, false, run},
          {"fuse", -inf, inf, false, run},
          {"precision", -inf, inf, false, run},
          {"layout", -inf, inf, false, run},
          {"metrics", -inf, inf, false, {"train"}},
          {"plan_only", -inf, inf, false, {"train", "time"}},
          {"max_memory", -inf, inf, false, {"train", "time"}, "plan_only"},
          {"batch_size", 1, 1 << 24, false, run}};
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

}  // namespace trainer

int main(int argc, char** argv) {
  return cortado::RunTool(argc, argv, trainer::kUsage, [&](int argc, char** argv) {
    const std::map<std::string, int (*)()> commands = {{"train", trainer::TrainAnyWhere},
                                                       {"test", trainer::Test},
                                                       {"time", trainer::Time},
                                                       {"device_query", trainer::DeviceQuery},
                                                       {"upgrade", trainer::Upgrade}};
    CORTADO_REQUIRE(argc >= 2, "no command given (valid commands: train, test, time, device_query, upgrade; "
                    "see trainer --help)");
    CORTADO_REQUIRE(argc == 2, "unexpected argument '", argv[2], "' (flags are written --name=value; "
                    "see trainer --help)");
    auto it = commands.find(argv[1]);
    if (it == commands.end())
      cortado::Fail("unknown command '", argv[1], "' (valid commands: train, test, time, device_query, upgrade)");
    cortado::CheckFlags(trainer::FlagRules(), argv[1]);
    if (!FLAGS_max_memory.empty()) cortado::BytesFromText(FLAGS_max_memory, "--max_memory");  // before any work
    cortado::CpuEngineSetting();  // a bad CORTADO_CPU_ENGINE is an error here, before anything runs
    if (!FLAGS_cpu_engine.empty()) cortado::SetCpuEngine(cortado::ParseCpuEngine(FLAGS_cpu_engine, "--cpu_engine"));
    cortado::Context::SetCpuThreads(FLAGS_threads);
    return it->second();
  });
}
