// training_gpu_test.cpp — training end to end on the GPU: the Data layer hands the CPU's batches to
// the GPU (HDF5Data, and batches queued without waiting: batch_upload_gpu_test.cpp); a small deterministic net (LMDB data, InnerProduct, ReLU, SoftmaxWithLoss,
// no dropout) trains with the CPU's loss sequence for every solver type, with clipping, weight decay
// and iter_size; training steps allocate no device memory; snapshots of a GPU run load on the CPU and
// the other way round, history included; LeNet reaches Caffe's accuracy on MNIST through
// `trainer train --gpu=0`; `trainer test`, `time` and `device_query` run on the GPU. CUDA graphs:
// replay equals eager, what turns them off (computed labels, a Filter, a failed capture), DummyData
// filled once captured with the pass, divergence caught at a display or by the poll, and a non-finite
// gradient caught at its iteration with and without clipping; TF32 against strict FP32; cuDNN's
// deterministic algorithms and workspace limit.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>

#include "cortado/gpu_step.hpp"
#include "cortado/io.hpp"
#include "cortado/layer_registry.hpp"
#include "cortado/math_gpu.hpp"
#include "cortado/memory.hpp"
#include "cortado/solver.hpp"
#include "gpu_compare.hpp"
#include "layers/convolution_gpu.hpp"  // BuiltWithCudnn

namespace cortado::test {

namespace {

namespace fs = std::filesystem;

std::string DataLayer(const std::string& lmdb, const char* phase, int batch) {
  std::ostringstream out;
  out << "layer { name: 'data' type: 'Data' top: 'data' top: 'label' include { phase: " << phase << " }\n"
      << "  transform_param { scale: 0.00390625 }\n"
      << "  data_param { source: '" << lmdb << "' batch_size: " << batch << " backend: LMDB } }\n";
  return out.str();
}

// The tiny net of these tests (26 records: the epochs wrap inside batches), written into dir once.
std::string WriteTinyNet(const std::string& dir) {
  const std::string lmdb = dir + "/images_lmdb";
  const std::string path = dir + "/tiny.prototxt";
  if (fs::exists(path)) return path;
  WriteRandomImageLmdb(lmdb, 26, 1, 6, 4, 11);
  std::ofstream(path) << "name: 'tiny'\n" << DataLayer(lmdb, "TRAIN", 8) << DataLayer(lmdb, "TEST", 5) << R"(
layer { name: "ip1" type: "InnerProduct" bottom: "data" top: "ip1"
        inner_product_param { num_output: 16 weight_filler { type: "xavier" } bias_filler { type: "constant" value: 0.1 } } }
layer { name: "relu" type: "ReLU" bottom: "ip1" top: "ip1" }
layer { name: "ip2" type: "InnerProduct" bottom: "ip1" top: "ip2" inner_product_param { num_output: 4 weight_filler { type: "xavier" } } }
layer { name: "acc" type: "Accuracy" bottom: "ip2" bottom: "label" top: "accuracy" include { phase: TEST } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip2" bottom: "label" top: "loss" }
)";
  return path;
}

SolverParameter TinySolver(const std::string& dir, const std::string& type, bool gpu, const std::string& name) {
  SolverParameter param;
  const bool no_momentum = type == "AdaGrad" || type == "RMSProp";
  ReadProtoFromTextString(std::string("base_lr: 0.05 lr_policy: 'step' gamma: 0.5 stepsize: 4 momentum: ") +
                              (no_momentum ? "0" : "0.9") +
                              " momentum2: 0.999 delta: 1e-6 weight_decay: 0.001 clip_gradients: 2 iter_size: 2 "
                              "max_iter: 100 display: 3 random_seed: 17 test_iter: 2 test_interval: 4 "
                              "snapshot_after_train: false",
                          &param);
  param.set_type(type);
  param.set_net(WriteTinyNet(dir));
  param.set_solver_mode(gpu ? SolverParameter::GPU : SolverParameter::CPU);
  param.set_snapshot_prefix(dir + "/" + name);
  param.set_strict_fp32(true);  // the GPU's arithmetic within float rounding of the CPU's (TF32: its own test)
  return param;
}

// A plain GPU solver (fixed rate 0.01, seed 1, 10 iterations, no snapshots) over the net at `net`.
SolverParameter FixedRateGpuSolver(const std::string& net) {
  SolverParameter param;
  ReadProtoFromTextString("base_lr: 0.01 lr_policy: 'fixed' max_iter: 10 solver_mode: GPU random_seed: 1 "
                          "snapshot_after_train: false",
                          &param);
  param.set_net(net);
  return param;
}

// Every learnable parameter of the train net, concatenated, on the host.
std::vector<float> Weights(Solver& solver) {
  solver.context().Synchronize();
  std::vector<float> all;
  for (const Blob* p : solver.net()->learnable_params()) {
    const std::vector<float> values = p->ReadData();
    all.insert(all.end(), values.begin(), values.end());
  }
  return all;
}

// The history values a .solverstate holds, in order.
std::vector<float> History(const std::string& solverstate) {
  SolverState state;
  ReadProtoFromBinaryFile(solverstate, &state);
  std::vector<float> all;
  for (const BlobProto& h : state.history()) all.insert(all.end(), h.data().begin(), h.data().end());
  return all;
}

// The CPU solver's current weights copied into the GPU solver's net.
void CopyWeights(Solver& from, Solver& to) {
  NetParameter weights;
  from.net()->ToProto(&weights);
  to.net()->CopyTrainedLayersFrom(weights);
}

// The last n characters of a log (for failure messages).
std::string Tail(const std::string& text, size_t n = 3000) {
  return text.size() > n ? text.substr(text.size() - n) : text;
}

}  // namespace

// ---- data to the GPU -----------------------------------------------------------------------------

TEST(DataGpu, DataLayerBatchesEqualTheCpus) {
  SKIP_WITHOUT_GPU();
  const std::string dir = TempDir();
  WriteTinyNet(dir);
  const std::string text = "name: 'data' type: 'Data' top: 'data' top: 'label' phase: TRAIN "
                           "transform_param { scale: 0.5 crop_size: 4 mirror: true } "
                           "data_param { source: '" + dir + "/images_lmdb' batch_size: 7 backend: LMDB rand_skip: 5 }";
  LayerFixture cpu(text, {}, 2, 3, Device::kCPU);
  LayerFixture gpu(text, {}, 2, 3, Device::kGPU);
  EXPECT_TRUE(gpu.layer().HasGpuImplementation());
  for (int batch = 0; batch < 6; ++batch) {  // 42 records of 26: the epoch wraps, staging is reused
    cpu.Forward();
    gpu.Forward();
    gpu.ctx().Synchronize();
    EXPECT_EQ(gpu.top(0).ReadData(), cpu.top(0).ReadData()) << "batch " << batch;
    EXPECT_EQ(gpu.top(1).ReadData(), cpu.top(1).ReadData()) << "batch " << batch;
  }
  EXPECT_EQ(gpu.layer().reader_state().position, cpu.layer().reader_state().position);
}

// ---- training ------------------------------------------------------------------------------------

class TrainingGpu : public testing::TestWithParam<std::string> {};

TEST_P(TrainingGpu, LossSequenceAndWeightsFollowTheCpus) {
  SKIP_WITHOUT_GPU();
  const std::string dir = TempDir();
  Solver cpu(TinySolver(dir, GetParam(), false, "cpu"));
  Solver gpu(TinySolver(dir, GetParam(), true, "gpu"));
  ASSERT_EQ(gpu.context().device(), Device::kGPU);
  ASSERT_EQ(cpu.context().device(), Device::kCPU);
  ExpectNear(Weights(gpu), Weights(cpu), 0.0f, "initial weights (the same fillers and seed)");
  CopyWeights(cpu, gpu);
  for (int i = 0; i < 10; ++i) {
    cpu.Step(1);
    gpu.Step(1);
    EXPECT_NEAR(gpu.smoothed_loss(), cpu.smoothed_loss(), 1e-4f * std::max(1.0f, std::fabs(cpu.smoothed_loss())))
        << "iteration " << i;
  }
  ExpectNear(Weights(gpu), Weights(cpu), 1e-4f, "weights after 10 steps");
  cpu.TestAll();
  gpu.TestAll();
  ExpectNear(gpu.last_test_scores(0), cpu.last_test_scores(0), 1e-4f, "test scores");
}

INSTANTIATE_TEST_SUITE_P(AllTypes, TrainingGpu,
                         testing::Values("SGD", "Nesterov", "AdaGrad", "RMSProp", "AdaDelta", "Adam"));

// With TF32 (the default on sm_80+) the run follows the CPU's within TF32's rounding, compared in norm.
TEST(TrainingGpuTf32, LossAndWeightsFollowTheCpuWithinTf32Rounding) {
  SKIP_WITHOUT_GPU();
  const std::string dir = TempDir();
  SolverParameter tf32 = TinySolver(dir, "SGD", true, "tf32");
  tf32.set_strict_fp32(false);
  Solver cpu(TinySolver(dir, "SGD", false, "cpu"));
  Solver gpu(tf32);
  for (int i = 0; i < 10; ++i) {
    cpu.Step(1);
    gpu.Step(1);
    ExpectGpuClose(gpu.context(), {gpu.smoothed_loss()}, {cpu.smoothed_loss()}, 1e-4f,
                   "loss at iteration " + std::to_string(i), 2e-2f);
  }
  ExpectGpuClose(gpu.context(), Weights(gpu), Weights(cpu), 1e-4f, "weights after 10 steps", 1e-2f);
}

// A device context uses TF32 exactly when the GPU has it and strict_fp32 is off, and cuBLAS follows:
// 1 + 2^-14 rounds to 1 in TF32 (10-bit mantissa), so a product of 1024 such values by ones sums to
// 1024 exactly in TF32 and to 1024 + 2^-4 in FP32 (exact in any order: every partial sum fits 24 bits).
TEST(TrainingGpuTf32, CublasRoundsToTf32OnlyWhenAllowed) {
  SKIP_WITHOUT_GPU();
  for (const bool strict : {true, false}) {
    Context ctx(Device::kGPU, 1);
    GpuSettings settings;
    settings.strict_fp32 = strict;
    ctx.SetGpuSettings(settings);
    const int n = 1024;  // large enough that cuBLAS takes tensor-core kernels when allowed
    Blob a(std::vector<int>{n, n}), b(std::vector<int>{n, n}), c(std::vector<int>{n, n});
    MemoryPlan plan(Device::kGPU);
    for (Blob* blob : {&a, &b, &c}) plan.RequestBlob(blob, false);
    auto arena = plan.Allocate();
    a.WriteData(std::vector<float>(n * n, 1.0f + std::ldexp(1.0f, -14)));
    b.WriteData(std::vector<float>(n * n, 1.0f));
    gpu_gemm(ctx, Trans::kNo, Trans::kNo, n, n, n, 1.0f, a.data(), b.data(), 0.0f, c.data());
    ctx.Synchronize();
    const float got = c.ReadData()[0];
    if (ctx.tf32()) {
      EXPECT_EQ(got, 1024.0f) << "TF32 allowed but cuBLAS kept FP32";
    } else {
      EXPECT_EQ(got, 1024.0f + std::ldexp(1.0f, -4)) << (strict ? "strict_fp32" : "no TF32 on this GPU");
    }
    if (!strict) EXPECT_EQ(ctx.tf32(), RunCommand("nvidia-smi --query-gpu=compute_cap --format=csv,noheader | "
                                                 "grep -qE '^([89]|[1-9][0-9])'").exit_code == 0);
  }
}

TEST(TrainingGpuMemory, StepsAllocateNoDeviceMemory) {
  SKIP_WITHOUT_GPU();
  const std::string dir = TempDir();
  SolverParameter param = TinySolver(dir, "Adam", true, "gpu");
  param.set_snapshot(5);  // snapshots, tests and displays inside the steps
  Solver solver(param);
  solver.Step(2);  // the warm-up iteration, then the one that captures the CUDA graphs
  ASSERT_TRUE(solver.gpu_stepper()->using_graphs());
  const int64_t before = GpuAllocationCount();
  const size_t free_before = GpuFreeMemory();
  solver.Step(10);
  EXPECT_EQ(GpuAllocationCount(), before) << "a training step allocated device memory";
  EXPECT_EQ(GpuFreeMemory(), free_before) << "device memory was taken during the steps (a library's own allocation?)";
  EXPECT_EQ(solver.iter(), 12);
}

// Memory reuse on the GPU (test net sharing the train net's region, CUDA graphs replaying over reused
// buffers) trains to the same bits as every buffer in memory of its own.
TEST(TrainingGpuMemory, ReuseOnAndOffTrainTheSameBits) {
  SKIP_WITHOUT_GPU();
  std::vector<std::vector<float>> weights;
  for (const bool reuse : {true, false}) {
    const std::string dir = TempDir() + (reuse ? "/on" : "/off");
    fs::create_directories(dir);
    SolverParameter param = TinySolver(dir, "SGD", true, "reuse");
    param.set_deterministic(true);
    param.set_memory_reuse(reuse);
    Solver solver(param);
    solver.Step(12);  // tests at 4, 8 and 12 run between the steps, in the train net's memory
    ASSERT_TRUE(solver.gpu_stepper()->using_graphs());
    solver.context().Synchronize();
    std::vector<float> all;
    for (const Blob* p : solver.net()->learnable_params())
      for (float v : p->ReadData()) all.push_back(v);
    weights.push_back(all);
  }
  EXPECT_TRUE(weights[0] == weights[1]) << "reuse changed the trained weights";
}

// The tiny net with dropout after the hidden layer: every step needs a new mask.
std::string WriteTinyDropoutNet(const std::string& dir) {
  std::string text = ReadFile(WriteTinyNet(dir));
  const std::string relu = "layer { name: \"relu\"";
  text.insert(text.find(relu), "layer { name: \"drop\" type: \"Dropout\" bottom: \"ip1\" top: \"ip1\" "
                               "dropout_param { dropout_ratio: 0.3 } include { phase: TRAIN } }\n");
  const std::string path = dir + "/tiny_dropout.prototxt";
  WriteFile(path, text);
  return path;
}

class TrainingGpuGraphs : public testing::TestWithParam<std::string> {};

// The same run with graphs and without: replaying the captured kernels with each step's rate, Adam
// correction and dropout seeds gives the eager run's weights exactly.
TEST_P(TrainingGpuGraphs, ReplayEqualsEagerBitForBit) {
  SKIP_WITHOUT_GPU();
  const std::string dir = TempDir();
  SolverParameter param = TinySolver(dir, GetParam(), true, "graph");
  param.set_net(WriteTinyDropoutNet(dir));
  Solver graphs(param, "graphs.prototxt", true);
  Solver eager(param, "eager.prototxt", false);
  ASSERT_TRUE(graphs.gpu_stepper()->using_graphs());
  ASSERT_FALSE(eager.gpu_stepper()->using_graphs());
  for (int i = 0; i < 3; ++i) {
    graphs.Step(4);
    eager.Step(4);
    EXPECT_EQ(graphs.smoothed_loss(), eager.smoothed_loss()) << "after " << 4 * (i + 1) << " iterations";
  }
  ExpectNear(Weights(graphs), Weights(eager), 0.0f, "weights after 12 iterations");
  // Iteration 1 warms up; from the second, each iteration replays the pass graph iter_size (2) times
  // and the update graph once.
  EXPECT_EQ(graphs.gpu_stepper()->graph_launches(), 3 * 11);
  EXPECT_EQ(eager.gpu_stepper()->graph_launches(), 0);
}

INSTANTIATE_TEST_SUITE_P(SgdAndAdam, TrainingGpuGraphs, testing::Values("SGD", "Adam"));

TEST(TrainingGpuGraphs, LabelsOnlyTheGpuCanCheckTurnGraphsOff) {
  SKIP_WITHOUT_GPU();
  const std::string dir = TempDir();
  const std::string net = dir + "/dummy_labels.prototxt";
  WriteFile(net, R"(name: "dummy"
layer { name: "data" type: "DummyData" top: "data" top: "label"
        dummy_data_param { shape { dim: 8 dim: 5 } shape { dim: 8 }
                           data_filler { type: "gaussian" } data_filler { type: "constant" value: 2 } } }
layer { name: "computed" type: "Power" bottom: "label" top: "computed_label" }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip" inner_product_param { num_output: 3 weight_filler { type: "xavier" } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "computed_label" top: "loss" }
)");
  Solver solver(FixedRateGpuSolver(net));
  EXPECT_FALSE(solver.gpu_stepper()->using_graphs()) << "the loss waits for the GPU to check computed labels";
  solver.Step(3);  // eager steps still train
  EXPECT_TRUE(std::isfinite(solver.smoothed_loss()));
}

TEST(TrainingGpuGraphs, BadLabelsFromTheDataLayerFailOnTheHostNamingTheLoss) {
  SKIP_WITHOUT_GPU();
  const std::string dir = TempDir();
  const std::string lmdb = WriteRandomImageLmdb(dir + "/ten_classes_lmdb", 16, 1, 6, 10, 3);
  const std::string net = dir + "/four_outputs.prototxt";
  WriteFile(net, "name: 'bad'\n" + DataLayer(lmdb, "TRAIN", 8) + R"(
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip" inner_product_param { num_output: 4 weight_filler { type: "xavier" } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
)");
  Solver solver(FixedRateGpuSolver(net));
  EXPECT_TRUE(solver.gpu_stepper()->using_graphs());
  const std::string error = ErrorOf([&] { solver.Step(1); });
  EXPECT_NE(error.find("layer loss (SoftmaxWithLoss): label 4 (at position 4) is outside the valid range [0, 4)"),
            std::string::npos)
      << error;
}

// DummyData's labels (constant or drawn) are known on the host: checked there, graphs stay on.
TEST(TrainingGpuGraphs, DummyDataLabelsAreCheckedOnTheHost) {
  SKIP_WITHOUT_GPU();
  const std::string dir = TempDir();
  for (const std::string label : {"type: 'constant' value: 2", "type: 'constant' value: 3"}) {
    const std::string net = dir + "/dummy.prototxt";
    WriteFile(net, "name: 'dummy'\nlayer { name: 'data' type: 'DummyData' top: 'data' top: 'label' dummy_data_param {"
                   " shape { dim: 8 dim: 5 } shape { dim: 8 } data_filler { type: 'gaussian' } data_filler { " +
                       label + " } } }\n" R"(
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip" inner_product_param { num_output: 3 weight_filler { type: "xavier" } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
)");
    Solver solver(FixedRateGpuSolver(net));
    EXPECT_TRUE(solver.gpu_stepper()->using_graphs());
    if (label.find("value: 2") != std::string::npos) {
      solver.Step(3);
      EXPECT_TRUE(std::isfinite(solver.smoothed_loss()));
    } else {
      EXPECT_NE(ErrorOf([&] { solver.Step(1); }).find("layer loss (SoftmaxWithLoss): label 3 (at position 0) is "
                                                       "outside the valid range [0, 3)"),
                std::string::npos);
    }
  }
}

// The tiny net's SGD solver at a rate of 1e30 without clipping: the loss is not finite within steps.
SolverParameter DivergingSolver(const std::string& dir) {
  SolverParameter param = TinySolver(dir, "SGD", true, "diverge");
  param.set_base_lr(1e30f);
  param.clear_clip_gradients();
  return param;
}

TEST(TrainingGpuGraphs, DivergenceIsCaughtAtTheNextDisplayNamingItsIteration) {
  SKIP_WITHOUT_GPU();
  SolverParameter param = DivergingSolver(TempDir());
  param.set_display(5);
  Solver solver(param);
  const std::string error = ErrorOf([&] { solver.Step(20); });
  EXPECT_NE(error.find("training diverged at iteration "), std::string::npos) << error;
  EXPECT_LE(solver.iter(), 6) << "the first display after the divergence stops training";
}

TEST(TrainingGpuGraphs, DivergenceWithoutDisplayIsCaughtByThePoll) {
  SKIP_WITHOUT_GPU();
  SolverParameter param = DivergingSolver(TempDir());
  param.set_display(0);
  param.clear_test_interval();
  param.clear_test_iter();
  Solver solver(param);
  const std::string error = ErrorOf([&] { solver.Step(200); });
  EXPECT_NE(error.find("training diverged at iteration "), std::string::npos) << error;
  EXPECT_LE(solver.iter(), 3 * GpuStepper::kNonFinitePollInterval) << "the poll stops training without a display";
}

// A gradient that is not finite while the loss is (√h at h = 0 has an infinite derivative) stops
// training at its own iteration, on either device, with clipping on or off: without clipping the GPU
// step computes no gradient norm, and its update kernel is what notices.
TEST(TrainingGpuGraphs, ANonFiniteGradientStopsTrainingAtItsIterationWithOrWithoutClipping) {
  SKIP_WITHOUT_GPU();
  const std::string dir = TempDir();
  const std::string net = dir + "/root.prototxt";
  WriteFile(net, R"(name: "root"
layer { name: "in" type: "DummyData" top: "x" top: "y"
        dummy_data_param { shape { dim: 4 dim: 3 } shape { dim: 4 dim: 2 } data_filler { type: "constant" value: 1 } } }
layer { name: "ip" type: "InnerProduct" bottom: "x" top: "h"
        inner_product_param { num_output: 2 weight_filler { type: "constant" value: 0 } } }
layer { name: "root" type: "Power" bottom: "h" top: "r" power_param { power: 0.5 } }
layer { name: "loss" type: "EuclideanLoss" bottom: "r" bottom: "y" top: "loss" }
)");
  for (const bool gpu : {false, true}) {
    for (const float clip : {-1.0f, 10.0f}) {
      SCOPED_TRACE(std::string(gpu ? "GPU" : "CPU") + ", clip_gradients " + std::to_string(clip));
      SolverParameter param = FixedRateGpuSolver(net);
      if (!gpu) param.set_solver_mode(SolverParameter::CPU);
      param.set_display(1);
      param.set_clip_gradients(clip);
      Solver solver(param);
      const std::string error = ErrorOf([&] { solver.Step(5); });
      EXPECT_NE(error.find("training diverged at iteration 0 (loss = 1)"), std::string::npos) << error;
    }
  }
}

// A DummyData layer that draws nothing after its first pass (constants; random values with refill:
// false) is captured with the rest of the forward pass, and the replays train as the eager steps do.
TEST(TrainingGpuGraphs, DummyDataFilledOnceIsCapturedAndReplaysLikeEager) {
  SKIP_WITHOUT_GPU();
  const std::string dir = TempDir();
  const std::string net = dir + "/fixed_batch.prototxt";
  WriteFile(net, R"(name: "fixed_batch"
layer { name: "data" type: "DummyData" top: "data" top: "label"
        dummy_data_param { refill: false shape { dim: 8 dim: 5 } shape { dim: 8 }
                           data_filler { type: "gaussian" } data_filler { type: "constant" value: 1 } } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
        inner_product_param { num_output: 3 weight_filler { type: "xavier" } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
)");
  SolverParameter param = FixedRateGpuSolver(net);
  param.set_strict_fp32(true);
  Solver graphs(param, "graphs.prototxt", true);
  Solver eager(param, "eager.prototxt", false);
  ASSERT_TRUE(graphs.gpu_stepper()->using_graphs());
  EXPECT_TRUE(graphs.net()->layer_by_name("data")->IsCapturable());
  graphs.Step(6);
  eager.Step(6);
  EXPECT_EQ(graphs.smoothed_loss(), eager.smoothed_loss());
  ExpectNear(Weights(graphs), Weights(eager), 0.0f, "weights after 6 iterations");
  EXPECT_EQ(graphs.gpu_stepper()->graph_launches(), 5);  // the whole step, from the second iteration
  graphs.context().Synchronize();
  const std::vector<float> batch = graphs.net()->blob_by_name("data")->ReadData();
  EXPECT_NE(batch, std::vector<float>(batch.size(), 0.0f)) << "never filled";
  EXPECT_EQ(batch, eager.net()->blob_by_name("data")->ReadData()) << "the same fixed batch on both";
  graphs.Step(2);
  graphs.context().Synchronize();
  EXPECT_EQ(graphs.net()->blob_by_name("data")->ReadData(), batch) << "the batch changed after its first pass";
}

// A Filter ahead of the rest of the net: the layers after it take its row count every pass, which a
// replayed graph would not.
TEST(TrainingGpuGraphs, AFilterTurnsGraphsOff) {
  SKIP_WITHOUT_GPU();
  const std::string dir = TempDir();
  const std::string net = dir + "/filtered.prototxt";
  WriteFile(net, R"(name: "filtered"
layer { name: "data" type: "DummyData" top: "data" top: "label" top: "keep"
        dummy_data_param { shape { dim: 8 dim: 5 } shape { dim: 8 } shape { dim: 8 }
                           data_filler { type: "gaussian" } data_filler { type: "constant" value: 1 }
                           data_filler { type: "constant" value: 1 } } }
layer { name: "filter" type: "Filter" bottom: "data" bottom: "label" bottom: "keep" top: "kept" top: "kept_label" }
layer { name: "ip" type: "InnerProduct" bottom: "kept" top: "ip" inner_product_param { num_output: 3 weight_filler { type: "xavier" } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "kept_label" top: "loss" }
)");
  Solver solver(FixedRateGpuSolver(net));
  EXPECT_FALSE(solver.gpu_stepper()->using_graphs()) << "the Filter reshapes the layers after it every pass";
  solver.Step(3);
  EXPECT_EQ(solver.gpu_stepper()->graph_launches(), 0);
  EXPECT_TRUE(std::isfinite(solver.smoothed_loss()));
}

namespace {

// A layer that claims it can be captured but waits for the GPU in its forward pass (as a library call
// that cannot be captured would): its capture fails.
class CaptureBreakerLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "CaptureBreakerForTest"; }
  bool HasGpuImplementation() const override { return true; }
  void Reshape(const BlobVec& bottom, const BlobVec& top) override { top[0]->Reshape(bottom[0]->shape()); }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    std::copy(bottom[0]->data(), bottom[0]->data() + bottom[0]->count(), top[0]->data());
  }
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& down, const BlobVec& bottom) override {
    if (down[0]) std::copy(top[0]->diff(), top[0]->diff() + top[0]->count(), bottom[0]->diff());
  }
  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    gpu_copy(ctx_, bottom[0]->count(), bottom[0]->data(), top[0]->data());
    ctx_.Synchronize();  // not allowed while the stream is being captured
  }
  void Backward_gpu(const BlobVec& top, const std::vector<bool>& down, const BlobVec& bottom) override {
    if (down[0]) gpu_copy(ctx_, top[0]->count(), top[0]->diff(), bottom[0]->diff());
  }
};

CORTADO_REGISTER_LAYER(CaptureBreakerForTest, CaptureBreakerLayer);

}  // namespace

TEST(TrainingGpuGraphs, ACaptureThatFailsFallsBackToEagerSteps) {
  SKIP_WITHOUT_GPU();
  const std::string dir = TempDir();
  std::string text = ReadFile(WriteTinyNet(dir));
  const std::string relu = "layer { name: \"relu\"";
  text.insert(text.find(relu), "layer { name: \"breaker\" type: \"CaptureBreakerForTest\" bottom: \"ip1\" "
                               "top: \"ip1b\" }\n");
  text.replace(text.find("bottom: \"ip1\" top: \"ip1\" }"), std::string("bottom: \"ip1\" top: \"ip1\" }").size(),
               "bottom: \"ip1b\" top: \"ip1b\" }");
  text.replace(text.find("bottom: \"ip1\" top: \"ip2\""), std::string("bottom: \"ip1\" top: \"ip2\"").size(),
               "bottom: \"ip1b\" top: \"ip2\"");
  WriteFile(dir + "/breaker.prototxt", text);
  SolverParameter param = TinySolver(dir, "SGD", true, "breaker");
  param.set_net(dir + "/breaker.prototxt");
  Solver graphs(param, "graphs.prototxt", true);
  Solver eager(param, "eager.prototxt", false);
  ASSERT_TRUE(graphs.gpu_stepper()->using_graphs()) << "the layer claims it can be captured";
  graphs.Step(6);
  eager.Step(6);
  EXPECT_FALSE(graphs.gpu_stepper()->using_graphs()) << "the failed capture turns graphs off";
  EXPECT_EQ(graphs.gpu_stepper()->graph_launches(), 0);
  EXPECT_EQ(graphs.smoothed_loss(), eager.smoothed_loss());
  ExpectNear(Weights(graphs), Weights(eager), 0.0f, "weights after 6 iterations");
}

namespace {

// A small convolutional net over 3×16×16 images (26 records, batch 8), so cuDNN chooses algorithms.
std::string WriteConvNet(const std::string& dir) {
  // Several solvers of one test share the database: it is written once.
  const std::string lmdb = fs::exists(dir + "/color_lmdb") ? dir + "/color_lmdb"
                                                           : WriteRandomImageLmdb(dir + "/color_lmdb", 26, 3, 16, 4, 5);
  const std::string path = dir + "/conv.prototxt";
  WriteFile(path, "name: 'conv'\n" + DataLayer(lmdb, "TRAIN", 8) + R"(
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
        convolution_param { num_output: 16 kernel_size: 3 pad: 1 weight_filler { type: "xavier" } } }
layer { name: "relu1" type: "ReLU" bottom: "conv1" top: "conv1" }
layer { name: "conv2" type: "Convolution" bottom: "conv1" top: "conv2"
        convolution_param { num_output: 16 kernel_size: 5 pad: 2 stride: 2 weight_filler { type: "xavier" } } }
layer { name: "pool" type: "Pooling" bottom: "conv2" top: "pool" pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
layer { name: "ip" type: "InnerProduct" bottom: "pool" top: "ip" inner_product_param { num_output: 4 weight_filler { type: "xavier" } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
)");
  return path;
}

SolverParameter ConvSolver(const std::string& dir, bool gpu) {
  SolverParameter param;
  ReadProtoFromTextString("base_lr: 0.05 lr_policy: 'fixed' momentum: 0.9 weight_decay: 0.0005 max_iter: 100 "
                          "display: 0 random_seed: 3 snapshot_after_train: false",
                          &param);
  param.set_net(WriteConvNet(dir));
  param.set_solver_mode(gpu ? SolverParameter::GPU : SolverParameter::CPU);
  return param;
}

// The bytes of every convolution's cuDNN workspace in a solver's train net.
std::vector<int64_t> WorkspaceBytes(Solver& solver) {
  std::vector<int64_t> bytes;
  for (const auto& layer : solver.net()->layers())
    for (const auto& scratch : layer->scratch_buffers())
      if (scratch.workspace) bytes.push_back(scratch.blob->count() * int64_t{sizeof(float)});
  return bytes;
}

}  // namespace

// deterministic: two runs of the same solver end with the same bits (cuDNN's backward algorithms that
// add with atomics are passed over), in TF32 as in FP32.
TEST(TrainingGpuCudnn, DeterministicRunsRepeatBitForBit) {
  SKIP_WITHOUT_GPU();
  for (const bool strict : {true, false}) {
    const std::string dir = TempDir();
    SolverParameter param = ConvSolver(dir, true);
    param.set_deterministic(true);
    param.set_strict_fp32(strict);
    Solver first(param, "first.prototxt");
    Solver second(param, "second.prototxt");
    first.Step(6);
    second.Step(6);
    EXPECT_EQ(Weights(first), Weights(second)) << (strict ? "strict FP32" : "TF32");
  }
}

// The cuDNN workspace follows cudnn_workspace_limit_mb: with 0, algorithms that need none (and the
// run still follows the CPU's); with the default, one region as large as the largest chosen need.
TEST(TrainingGpuCudnn, WorkspaceStaysWithinTheLimitAndZeroStillTrains) {
  SKIP_WITHOUT_GPU();
  if (!BuiltWithCudnn()) GTEST_SKIP() << "this build has no cuDNN";
  const std::string dir = TempDir();
  SolverParameter none = ConvSolver(dir, true);
  none.set_cudnn_workspace_limit_mb(0);
  none.set_strict_fp32(true);
  Solver gpu(none);
  const std::vector<int64_t> bytes = WorkspaceBytes(gpu);
  ASSERT_FALSE(bytes.empty());
  for (int64_t b : bytes) EXPECT_EQ(b, 0);
  Solver cpu(ConvSolver(dir, false));
  CopyWeights(cpu, gpu);
  for (int i = 0; i < 4; ++i) {
    cpu.Step(1);
    gpu.Step(1);
    EXPECT_NEAR(gpu.smoothed_loss(), cpu.smoothed_loss(), 1e-3f * std::max(1.0f, std::fabs(cpu.smoothed_loss())))
        << "iteration " << i;
  }
  SolverParameter ample = ConvSolver(dir, true);
  ample.set_cudnn_workspace_limit_mb(1);
  Solver small(ample);
  for (int64_t b : WorkspaceBytes(small)) EXPECT_LE(b, int64_t{1} << 20);
  ample.set_cudnn_workspace_limit_mb(-1);
  EXPECT_NE(ErrorOf([&] { Solver bad(ample); }).find("cudnn_workspace_limit_mb must be between 0 and 8191"),
            std::string::npos);
}

class TrainingGpuSnapshots : public testing::TestWithParam<std::string> {};

TEST_P(TrainingGpuSnapshots, GpuSnapshotsLoadOnTheCpuAndCpuSnapshotsOnTheGpu) {
  SKIP_WITHOUT_GPU();
  const std::string dir = TempDir();
  // GPU → CPU: the same weights and history, and the runs go on alike.
  Solver gpu(TinySolver(dir, GetParam(), true, "gpu"));
  gpu.Step(5);
  const std::string gpu_state = gpu.Snapshot();
  Solver cpu(TinySolver(dir, GetParam(), false, "cpu"));
  cpu.Restore(gpu_state);
  EXPECT_EQ(cpu.iter(), 5);
  EXPECT_EQ(Weights(cpu), Weights(gpu));
  const std::string cpu_state = cpu.Snapshot();
  EXPECT_EQ(History(cpu_state), History(gpu_state));
  EXPECT_FALSE(History(gpu_state).empty());
  gpu.Step(3);
  cpu.Step(3);
  ExpectNear(Weights(gpu), Weights(cpu), 1e-4f, "weights 3 steps after the GPU snapshot");

  // CPU → GPU.
  const std::string cpu_state_8 = cpu.Snapshot();
  Solver gpu2(TinySolver(dir, GetParam(), true, "gpu2"));
  gpu2.Restore(cpu_state_8);
  EXPECT_EQ(gpu2.iter(), 8);
  EXPECT_EQ(Weights(gpu2), Weights(cpu));
  EXPECT_EQ(History(gpu2.Snapshot()), History(cpu_state_8));
  gpu2.Step(3);
  cpu.Step(3);
  ExpectNear(Weights(gpu2), Weights(cpu), 1e-4f, "weights 3 steps after the CPU snapshot");
}

INSTANTIATE_TEST_SUITE_P(Solvers, TrainingGpuSnapshots, testing::Values("SGD", "Adam"));

// ---- the trainer ---------------------------------------------------------------------------------

TEST(TrainerGpu, TrainTestTimeAndDeviceQueryRunOnTheGpu) {
  SKIP_WITHOUT_GPU();
  const std::string dir = TempDir();
  const std::string net = WriteTinyNet(dir);
  SolverParameter param = TinySolver(dir, "SGD", false, "tiny");  // CPU in the file; --gpu overrides
  param.set_max_iter(12);
  param.set_snapshot_after_train(true);
  WriteProtoToTextFile(param, dir + "/solver.prototxt");
  const std::string trainer = ToolPath("trainer");

  const auto train = RunCommand(trainer + " train --gpu=0 --solver=" + dir + "/solver.prototxt");
  ASSERT_EQ(train.exit_code, 0) << train.err;
  EXPECT_NE(train.err.find("Training on GPU 0"), std::string::npos) << train.err;
  EXPECT_NE(train.err.find("] Iteration 12, Testing net (#0)"), std::string::npos) << train.err;
  ASSERT_TRUE(FileExists(dir + "/tiny_iter_12.caffemodel"));

  const auto test = RunCommand(trainer + " test --gpu=0 --model=" + net + " --weights=" + dir +
                               "/tiny_iter_12.caffemodel --iterations=3");
  ASSERT_EQ(test.exit_code, 0) << test.err;
  for (const char* line : {"Use GPU with device ID 0", "] Batch 2, accuracy = ", "] Loss: ", "] accuracy = "})
    EXPECT_NE(test.err.find(line), std::string::npos) << line << "\n" << test.err;

  const auto time = RunCommand(trainer + " time --gpu=0 --model=" + net + " --iterations=3");
  ASSERT_EQ(time.exit_code, 0) << time.err;
  for (const char* line : {"Use GPU with device ID 0", "Iteration: 3 forward-backward time: ", "ip1\tforward: ",
                           "ip2\tbackward: ", "Average Forward-Backward: ", "*** Benchmark ends ***"})
    EXPECT_NE(time.err.find(line), std::string::npos) << line << "\n" << time.err;

  const auto query = RunCommand(trainer + " device_query --gpu=0");
  ASSERT_EQ(query.exit_code, 0) << query.err;
  EXPECT_NE(query.err.find("Compute capability:"), std::string::npos) << query.err;
  const auto missing = RunCommand(trainer + " device_query --gpu=999");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(CountLines(missing.err), 1) << missing.err;
}

// Caffe's LeNet recipe (models/mnist/lenet_solver.prototxt, 10,000 iterations) on the GPU.
TEST(TrainerGpu, LeNetReachesCaffesAccuracyOnMnist) {
  SKIP_WITHOUT_GPU();
  const std::string root = SourceDir();
  for (const char* file : {"/data/mnist/mnist_train_lmdb/data.mdb", "/data/mnist/mnist_test_lmdb/data.mdb"})
    ASSERT_TRUE(fs::exists(root + file)) << root + file << " is missing: scripts/test.sh prepares MNIST";
  const std::string dir = TempDir();
  SolverParameter param = ReadSolverParameter(root + "/models/mnist/lenet_solver.prototxt");
  param.set_snapshot(0);
  param.set_snapshot_after_train(false);
  param.set_snapshot_prefix(dir + "/lenet");
  param.set_random_seed(1);
  param.set_display(1000);
  WriteProtoToTextFile(param, dir + "/lenet_solver.prototxt");
  const auto train = RunCommand("cd " + root + " && " + ToolPath("trainer") + " train --gpu=0 --solver=" + dir +
                                "/lenet_solver.prototxt");
  ASSERT_EQ(train.exit_code, 0) << Tail(train.err);
  EXPECT_NE(train.err.find("Training on GPU 0"), std::string::npos);
  EXPECT_NE(train.err.find("] Iteration 10000, Testing net (#0)"), std::string::npos);
  EXPECT_GE(LastLoggedValue(train.err, "accuracy", "Test net output #[0-9]+: "), 0.985) << Tail(train.err);
}

}  // namespace cortado::test
