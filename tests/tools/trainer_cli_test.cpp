// trainer_cli_test.cpp — the trainer's command line: --help, unknown flags, the progress line, the
// output of `trainer test` and `trainer time`, fine-tuning from several weight files (the later
// file wins for a layer both hold; solver.weights too), snapshot_diff, --gpu without a GPU, and
// --plan_only with --batch_size and --max_memory.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cortado/gpu.hpp"
#include "cortado/cpu_engine.hpp"
#include "cortado/io.hpp"
#include "test_util.hpp"

namespace cortado::test {

namespace {

const char* kNet = R"(
  name: "two"
  layer { name: "in" type: "DummyData" top: "x" top: "y"
          dummy_data_param { data_filler { type: "constant" value: 0.5 } shape { dim: 4 dim: 3 } shape { dim: 4 dim: 2 } } }
  layer { name: "a" type: "InnerProduct" bottom: "x" top: "h" inner_product_param { num_output: 3 weight_filler { type: "xavier" } } }
  layer { name: "b" type: "InnerProduct" bottom: "h" top: "z" inner_product_param { num_output: 2 weight_filler { type: "xavier" } } }
  layer { name: "loss" type: "EuclideanLoss" bottom: "z" bottom: "y" top: "loss" }
)";

std::string WriteNet(const std::string& dir) {
  const std::string path = dir + "/two.prototxt";
  std::ofstream(path) << kNet;
  return path;
}

std::string WriteSolver(const std::string& dir, const std::string& extra) {
  const std::string path = dir + "/solver.prototxt";
  std::ofstream(path) << "net: '" << WriteNet(dir) << "'\n"
                      << "base_lr: 0.1 lr_policy: 'fixed' momentum: 0.9 display: 10 random_seed: 1 solver_mode: CPU\n"
                      << "snapshot_prefix: '" << dir << "/two'\n"
                      << extra << "\n";
  return path;
}

// A convolution, then BatchNorm → Scale → ReLU in place (a chain the net fuses), an InnerProduct and a loss.
const char* kBatchNormNet = R"(name: "bn"
layer { name: "data" type: "DummyData" top: "data" top: "label"
        dummy_data_param { data_filler { type: "gaussian" } data_filler { type: "constant" value: 1 }
                           shape { dim: 4 dim: 3 dim: 8 dim: 8 } shape { dim: 4 } } }
layer { name: "conv" type: "Convolution" bottom: "data" top: "conv"
        convolution_param { num_output: 4 kernel_size: 3 bias_term: false weight_filler { type: "msra" } } }
layer { name: "bn" type: "BatchNorm" bottom: "conv" top: "conv" }
layer { name: "scale" type: "Scale" bottom: "conv" top: "conv" scale_param { bias_term: true } }
layer { name: "relu" type: "ReLU" bottom: "conv" top: "conv" }
layer { name: "ip" type: "InnerProduct" bottom: "conv" top: "ip" inner_product_param { num_output: 3 weight_filler { type: "xavier" } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
)";

// What a command printed on stdout.
std::string StdoutOf(const std::string& command, int* exit_code) {
  const std::string out = NewTempDir() + "/stdout.txt";
  *exit_code = RunCommand("(" + command + " >" + out + ")").exit_code;
  std::ifstream in(out);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A .caffemodel holding InnerProduct layers filled with one value each.
std::string WriteWeights(const std::string& path, const std::vector<std::pair<std::string, float>>& layers) {
  NetParameter model;
  for (const auto& [name, value] : layers) {
    LayerParameter* layer = model.add_layer();
    layer->set_name(name);
    const std::vector<std::vector<int>> shapes =
        name == "a" ? std::vector<std::vector<int>>{{3, 3}, {3}} : std::vector<std::vector<int>>{{2, 3}, {2}};
    for (const auto& shape : shapes) {
      BlobProto* blob = layer->add_blobs();
      int count = 1;
      for (int d : shape) blob->mutable_shape()->add_dim(d), count *= d;
      for (int i = 0; i < count; ++i) blob->add_data(value);
    }
  }
  WriteProtoToBinaryFile(model, path);
  return path;
}

float FirstWeight(const NetParameter& model, const std::string& layer) {
  for (const auto& l : model.layer())
    if (l.name() == layer) return l.blobs(0).data(0);
  ADD_FAILURE() << "no layer " << layer;
  return 0;
}

}  // namespace

TEST(TrainerCli, HelpPrintsUsageAndFlagsAndExitsZero) {
  int exit_code = -1;
  const std::string help = StdoutOf(ToolPath("trainer") + " --help", &exit_code);
  EXPECT_EQ(exit_code, 0);
  EXPECT_NE(help.find("usage: trainer <command>"), std::string::npos) << help;
  for (const char* flag : {"--solver", "--weights", "--snapshot", "--iterations", "--sigint_effect"})
    EXPECT_NE(help.find(flag), std::string::npos) << flag;
  EXPECT_EQ(help.find("--logtostderr"), std::string::npos) << "glog's own flags are not the tool's";
}

TEST(TrainerCli, UnknownFlagListsTheValidOnesAndTheClosest) {
  const auto r = RunCommand(ToolPath("trainer") + " train --solvr=x.prototxt");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(CountLines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("unknown flag --solvr (valid flags: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--weights"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("did you mean --solver?"), std::string::npos) << r.err;
  // A value after a non-boolean flag is not mistaken for a flag; glog's --v is known.
  const auto spaced = RunCommand(ToolPath("trainer") + " time --v=0 --model -1");
  EXPECT_EQ(spaced.err.find("unknown flag"), std::string::npos) << spaced.err;
}

TEST(TrainerCli, ProgressLineFollowsCaffesDisplayLine) {
  const std::string dir = TempDir();
  const auto r = RunCommand(ToolPath("trainer") + " train --solver=" + WriteSolver(dir, "max_iter: 40"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t display = r.err.find("] Iteration 20 (");
  ASSERT_NE(display, std::string::npos) << r.err;
  const size_t outputs = r.err.find("]     Train net output #0: loss = ", display);
  const size_t progress = r.err.find("]     Progress: 20/40 iterations (50.0%), ETA ", display);
  const size_t next = r.err.find("] Iteration 20, lr = ", display);
  ASSERT_NE(progress, std::string::npos) << r.err;
  EXPECT_LT(outputs, progress) << "Caffe's display block stays whole";
  EXPECT_LT(progress, next);
}

TEST(TrainerCli, TestAndTimePrintCaffesLines) {
  const std::string dir = TempDir();
  ASSERT_EQ(RunCommand(ToolPath("trainer") + " train --solver=" + WriteSolver(dir, "max_iter: 10")).exit_code, 0);
  const auto test = RunCommand(ToolPath("trainer") + " test --model=" + WriteNet(dir) + " --weights=" + dir +
                               "/two_iter_10.caffemodel --iterations=3");
  ASSERT_EQ(test.exit_code, 0) << test.err;
  for (const char* line : {"Running for 3 iterations.", "] Batch 0, loss = ", "] Batch 2, loss = ", "] Loss: ",
                           "] loss = "})
    EXPECT_NE(test.err.find(line), std::string::npos) << line << "\n" << test.err;
  EXPECT_NE(test.err.find(" loss)"), std::string::npos) << "the loss output shows its weight: (* 1 = x loss)";

  const auto time = RunCommand(ToolPath("trainer") + " time --model=" + WriteNet(dir) + " --iterations=4");
  ASSERT_EQ(time.exit_code, 0) << time.err;
  for (const char* line : {"*** Benchmark begins ***", "Iteration: 4 forward-backward time: ", "Average time per layer:",
                           "a\tforward: ", "b\tbackward: ", "Average Forward pass: ", "Average Backward pass: ",
                           "Average Forward-Backward: ", "Total Time: ", "*** Benchmark ends ***"})
    EXPECT_NE(time.err.find(line), std::string::npos) << line << "\n" << time.err;
}

TEST(TrainerCli, FinetunesFromSeveralWeightFilesTheLaterWinning) {
  const std::string dir = TempDir();
  const std::string first = WriteWeights(dir + "/first.caffemodel", {{"a", 1.0f}, {"b", 2.0f}});
  const std::string second = WriteWeights(dir + "/second.caffemodel", {{"a", 3.0f}, {"unknown_layer", 9.0f}});
  // max_iter 0: the snapshot after training holds exactly the weights copied in.
  const auto r = RunCommand(ToolPath("trainer") + " train --solver=" + WriteSolver(dir, "max_iter: 0") +
                            " --weights=" + first + "," + second);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  NetParameter model;
  ReadProtoFromBinaryFile(dir + "/two_iter_0.caffemodel", &model);
  EXPECT_EQ(FirstWeight(model, "a"), 3.0f);
  EXPECT_EQ(FirstWeight(model, "b"), 2.0f);

  // solver.weights does the same when no --weights is given.
  const std::string other = NewTempDir();
  const auto from_solver = RunCommand(ToolPath("trainer") + " train --solver=" +
                                      WriteSolver(other, "max_iter: 0 weights: '" + first + "'"));
  ASSERT_EQ(from_solver.exit_code, 0) << from_solver.err;
  ReadProtoFromBinaryFile(other + "/two_iter_0.caffemodel", &model);
  EXPECT_EQ(FirstWeight(model, "a"), 1.0f);
}

TEST(TrainerCli, SnapshotDiffWritesTheGradientsToo) {
  const std::string dir = TempDir();
  ASSERT_EQ(RunCommand(ToolPath("trainer") + " train --solver=" +
                       WriteSolver(dir, "max_iter: 3 snapshot_diff: true")).exit_code, 0);
  NetParameter model;
  ReadProtoFromBinaryFile(dir + "/two_iter_3.caffemodel", &model);
  int blobs = 0;
  for (const auto& layer : model.layer()) {
    for (const auto& blob : layer.blobs()) {
      ++blobs;
      EXPECT_EQ(blob.diff_size(), blob.data_size()) << layer.name();
      bool nonzero = false;
      for (float g : blob.diff()) nonzero |= g != 0;
      EXPECT_TRUE(nonzero) << layer.name() << " diff is all zeros";
    }
  }
  EXPECT_EQ(blobs, 4);
}

// The CPU engine flag: each value's engine in the net's "Convolution engines:" line, a bad value one line
// and exit 1; the threads flag; device_query's description of the CPU.
TEST(TrainerCli, CpuEngineAndThreadsFlags) {
  const std::string dir = TempDir();
  const std::string net = dir + "/conv.prototxt";
  std::ofstream(net) << R"(
    layer { name: "in" type: "DummyData" top: "x" top: "y"
            dummy_data_param { data_filler { type: "gaussian" } shape { dim: 2 dim: 3 dim: 8 dim: 8 } shape { dim: 2 dim: 4 dim: 3 dim: 3 } } }
    layer { name: "c" type: "Convolution" bottom: "x" top: "z" convolution_param { num_output: 4 kernel_size: 3 weight_filler { type: "xavier" } } }
    layer { name: "p" type: "Pooling" bottom: "z" top: "q" pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
    layer { name: "loss" type: "EuclideanLoss" bottom: "q" bottom: "y" top: "loss" }
  )";
  std::vector<std::pair<std::string, std::vector<std::string>>> cases{
      {"im2col", {"Convolution engines: im2col 1", "Pooling engines: caffe 1"}}};
  if (BuiltWithOneDnn()) cases.push_back({"onednn", {"Convolution engines: onednn 1", "Pooling engines: onednn 1"}});
  for (const auto& [engine, lines] : cases) {
    const auto time = RunCommand(ToolPath("trainer") + " time --cpu_engine=" + engine + " --threads=1 --model=" + net +
                                 " --iterations=1");
    ASSERT_EQ(time.exit_code, 0) << time.err;
    for (const std::string& line : lines) EXPECT_NE(time.err.find(line), std::string::npos) << line << "\n" << time.err;
  }
  for (const std::string bad : {"--cpu_engine=fast", "--threads=-2"}) {
    const auto r = RunCommand(ToolPath("trainer") + " time " + bad + " --model=" + net);
    EXPECT_EQ(r.exit_code, 1) << bad;
    EXPECT_EQ(CountLines(r.err), 1) << r.err;
  }
  const auto env = RunCommand("CORTADO_CPU_ENGINE=fast " + ToolPath("trainer") + " time --model=" + net);
  EXPECT_EQ(env.exit_code, 1);
  EXPECT_NE(env.err.find("CORTADO_CPU_ENGINE: unknown CPU engine 'fast'"), std::string::npos) << env.err;
  if (BuiltWithOneDnn()) {  // auto: timed in the first process, recorded, taken as recorded in the next
    const std::string cache = dir + "/cache";
    const std::string command = "CORTADO_CACHE_DIR=" + cache + " " + ToolPath("trainer") + " time -v=1 --cpu_engine=auto --model=" + net +
                                " --iterations=1";
    const auto first = RunCommand(command);
    ASSERT_EQ(first.exit_code, 0) << first.err;
    EXPECT_NE(first.err.find("layer c (Convolution): forward + backward im2col "), std::string::npos) << first.err;
    EXPECT_NE(first.err.find("layer p (Pooling): forward + backward caffe "), std::string::npos) << first.err;
    std::ifstream recorded(cache + "/cpu_engines.txt");
    std::string machine, shape, engine, pool_machine, pool_shape, pool_engine;
    ASSERT_TRUE(recorded >> machine >> shape >> engine >> pool_machine >> pool_shape >> pool_engine);
    EXPECT_EQ(shape, "Convolution:2,3,8,8,4,1,3,3,0,0,1,1,1,1,1");
    EXPECT_EQ(pool_shape, "Pooling:max,8,6,6,2,2,0,0,2,2,3,3");
    EXPECT_EQ(pool_machine, machine);
    const auto second = RunCommand(command);
    ASSERT_EQ(second.exit_code, 0) << second.err;
    EXPECT_NE(second.err.find("layer c (Convolution): " + engine + ", as timed before"), std::string::npos) << second.err;
    EXPECT_NE(second.err.find("Convolution engines: " + engine + " 1"), std::string::npos) << second.err;
    EXPECT_NE(second.err.find("layer p (Pooling): " + pool_engine + ", as timed before"), std::string::npos) << second.err;
  }
  const auto query = RunCommand(ToolPath("trainer") + " device_query");
  ASSERT_EQ(query.exit_code, 0) << query.err;
  for (const char* line : {"CPU: ", "CPU instruction sets: ", "BLAS: OpenBLAS ", "oneDNN: ", "CPU engine: ", "GPUs found: "})
    EXPECT_NE(query.err.find(line), std::string::npos) << line << "\n" << query.err;
}

TEST(TrainerCli, GpuFlagRejectsBadIdsAndFallsBackToTheCpuWithoutAGpu) {
  const std::string dir = TempDir();
  for (const char* bad : {"x", "0,y", "-1", ","}) {
    const auto r = RunCommand(ToolPath("trainer") + " time --gpu=" + bad + " --model=" + WriteNet(dir));
    EXPECT_EQ(r.exit_code, 1) << bad;
    EXPECT_EQ(CountLines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("--gpu="), std::string::npos) << r.err;
  }
  if (GpuCount() > 0) GTEST_SKIP() << "this machine has a GPU: tests/gpu/training_gpu_test.cpp runs --gpu on it";
  const auto train = RunCommand(ToolPath("trainer") + " train --gpu=0 --solver=" + WriteSolver(dir, "max_iter: 2"));
  ASSERT_EQ(train.exit_code, 0) << train.err;
  EXPECT_NE(train.err.find("; training on the CPU"), std::string::npos) << train.err;
  const auto time = RunCommand(ToolPath("trainer") + " time --gpu=all --model=" + WriteNet(dir) + " --iterations=1");
  ASSERT_EQ(time.exit_code, 0) << time.err;
  EXPECT_NE(time.err.find("; running on the CPU"), std::string::npos) << time.err;
  EXPECT_NE(time.err.find("*** Benchmark ends ***"), std::string::npos) << time.err;
  const auto query = RunCommand(ToolPath("trainer") + " device_query --gpu=0");
  EXPECT_EQ(query.exit_code, 1);
  EXPECT_EQ(CountLines(query.err), 1) << query.err;
}

// The bytes a --plan_only run printed ("... (N bytes in all)"), or 0.
size_t PlannedBytes(const std::string& out) {
  const size_t end = out.find(" bytes in all)");
  if (end == std::string::npos) return 0;
  const size_t begin = out.rfind('(', end);
  return std::stoull(out.substr(begin + 1, end - begin - 1));
}

TEST(TrainerCli, PlanOnlyPrintsThePlanAndTheLargestBatchThatFits) {
  const std::string dir = NewTempDir();
  const std::string trainer = ToolPath("trainer");
  int code = -1;
  // time: one net, any batch, for the GPU even without one (in a CUDA build: a CPU-only build has no
  // GPU layers to plan); reuse takes less than none.
  const std::string device = BuiltWithCuda() ? "GPU" : "CPU";
  const std::string time = trainer + " time --model=" + WriteNet(dir) + " --plan_only --batch_size=5000" +
                           (BuiltWithCuda() ? " --gpu=0" : "");
  const std::string with = StdoutOf(time + " 2>/dev/null", &code);
  EXPECT_EQ(code, 0);
  EXPECT_NE(with.find("Batch 5000: Memory plan (" + device + "): "), std::string::npos) << with;
  const std::string without = StdoutOf(time + " --memory_reuse=false 2>/dev/null", &code);
  EXPECT_GT(PlannedBytes(without), PlannedBytes(with));
  EXPECT_GT(PlannedBytes(with), 0u);

  // train: the solver's nets and history; the largest batch fits and the next does not.
  const std::string train = trainer + " train --solver=" + WriteSolver(dir, "") + " --plan_only";
  const std::string found = StdoutOf(train + " --max_memory=2M 2>/dev/null", &code);
  EXPECT_EQ(code, 0);
  const std::string prefix = "Largest batch that fits in 2.00 MB on the CPU: ";
  const size_t at = found.find(prefix);
  ASSERT_NE(at, std::string::npos) << found;
  const int batch = std::stoi(found.substr(at + prefix.size()));
  EXPECT_LE(PlannedBytes(StdoutOf(train + " --batch_size=" + std::to_string(batch) + " 2>/dev/null", &code)), 2000000u);
  EXPECT_GT(PlannedBytes(StdoutOf(train + " --batch_size=" + std::to_string(batch + 1) + " 2>/dev/null", &code)), 2000000u);
  EXPECT_FALSE(std::filesystem::exists(dir + "/two_iter_0.caffemodel")) << "plan_only trained";

  const CommandResult bad = RunCommand(train + " --max_memory=lots");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("--max_memory=lots is not a size"), std::string::npos) << bad.err;
  EXPECT_EQ(CountLines(bad.err), 1) << bad.err;
}

// The fused chains are the default and the log names them; --fuse=false (time, train) and the solver's
// fuse: false run every layer on its own.
TEST(TrainerCli, FuseFlagAndFieldTurnTheFusedChainsOff) {
  const std::string dir = NewTempDir();
  const std::string net = dir + "/bn.prototxt";
  WriteFile(net, kBatchNormNet);
  const std::string fused = "1 chain(s) of layers run fused, each as one layer (fuse: false runs them one by one): "
                            "bn+scale+relu";
  const std::string time = ToolPath("trainer") + " time --model=" + net + " --iterations=1";
  const auto on = RunCommand(time);
  ASSERT_EQ(on.exit_code, 0) << on.err;
  EXPECT_NE(on.err.find(fused), std::string::npos) << on.err;
  const auto off = RunCommand(time + " --fuse=false");
  ASSERT_EQ(off.exit_code, 0) << off.err;
  EXPECT_EQ(off.err.find("run fused"), std::string::npos) << off.err;

  const std::string solver = dir + "/solver.prototxt";
  WriteFile(solver, "net: \"" + net + "\"\nbase_lr: 0.01\nlr_policy: \"fixed\"\nmax_iter: 2\nsolver_mode: CPU\nsnapshot_after_train: false\n"
                    "snapshot_prefix: \"" + dir + "/s\"\nfuse: false\n");
  const auto field = RunCommand(ToolPath("trainer") + " train --solver=" + solver);
  ASSERT_EQ(field.exit_code, 0) << field.err;
  EXPECT_EQ(field.err.find("run fused"), std::string::npos) << field.err;
  WriteFile(solver, "net: \"" + net + "\"\nbase_lr: 0.01\nlr_policy: \"fixed\"\nmax_iter: 2\nsolver_mode: CPU\nsnapshot_after_train: false\n"
                    "snapshot_prefix: \"" + dir + "/s\"\n");
  const auto fresh = RunCommand(ToolPath("trainer") + " train --solver=" + solver);
  ASSERT_EQ(fresh.exit_code, 0) << fresh.err;
  EXPECT_NE(fresh.err.find(fused), std::string::npos) << fresh.err;
  const auto flag = RunCommand(ToolPath("trainer") + " train --fuse=false --solver=" + solver);
  ASSERT_EQ(flag.exit_code, 0) << flag.err;
  EXPECT_EQ(flag.err.find("run fused"), std::string::npos) << flag.err;
}

// --precision sets the nets' storage types (train, test, time; the log shows the Cast layers where types
// change); fp16 scales the loss dynamically, and a step whose gradients overflow is logged as skipped.
TEST(TrainerCli, PrecisionFlagStoresIn16BitsAndFp16LogsSkippedSteps) {
  const std::string dir = NewTempDir();
  const std::string net = dir + "/big_loss.prototxt";
  WriteFile(net, std::string(kNet).replace(std::string(kNet).find("top: \"loss\" }"), 14,
                                           "top: \"loss\" loss_weight: 10000 }"));
  const auto time = RunCommand(ToolPath("trainer") + " time --model=" + net + " --iterations=1 --precision=bf16");
  ASSERT_EQ(time.exit_code, 0) << time.err;
  EXPECT_NE(time.err.find("Cast layer(s) convert where a blob's storage type or layout changes"), std::string::npos)
      << time.err;
  const std::string solver = dir + "/solver.prototxt";
  WriteFile(solver, "net: \"" + net + "\"\nbase_lr: 0.0000001\nlr_policy: \"fixed\"\nmax_iter: 20\nsolver_mode: CPU\n"
                    "snapshot_after_train: false\nsnapshot_prefix: \"" + dir + "/s\"\n");
  const auto train = RunCommand(ToolPath("trainer") + " train --precision=fp16 --solver=" + solver);
  ASSERT_EQ(train.exit_code, 0) << train.err;
  EXPECT_NE(train.err.find("Iteration 0: a gradient overflowed at loss scale 65536; step skipped, loss scale now 32768"),
            std::string::npos)
      << train.err;
  const auto plain = RunCommand(ToolPath("trainer") + " train --solver=" + solver);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(plain.err.find("step skipped"), std::string::npos) << plain.err;
  const auto bad = RunCommand(ToolPath("trainer") + " train --precision=fp8 --solver=" + solver);
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(LastLine(bad.err).find("--precision=fp8: give fp32, bf16 or fp16"), std::string::npos) << bad.err;
}

// --layout=nhwc runs channels-last the layers that can (the chain from the convolution to the ReLU;
// the InnerProduct reads NCHW): Casts transpose before the chain and after it.
TEST(TrainerCli, LayoutFlagRunsChannelsLastWhereItCan) {
  const std::string dir = NewTempDir();
  const std::string net = dir + "/bn.prototxt";
  WriteFile(net, kBatchNormNet);
  const auto nhwc = RunCommand(ToolPath("trainer") + " time --model=" + net + " --iterations=1 --layout=nhwc");
  ASSERT_EQ(nhwc.exit_code, 0) << nhwc.err;
  EXPECT_NE(nhwc.err.find(": NHWC: 2 Cast layer(s) convert where a blob's storage type or layout changes"),
            std::string::npos)
      << nhwc.err;
  const auto bad = RunCommand(ToolPath("trainer") + " time --model=" + net + " --iterations=1 --layout=nwhc");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(LastLine(bad.err).find("--layout=nwhc: give nchw or nhwc"), std::string::npos) << bad.err;
}

}  // namespace cortado::test
