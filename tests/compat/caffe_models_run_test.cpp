// caffe_models_run_test.cpp — every net prototxt Caffe ships, and NVIDIA Caffe's fp16 training nets
// (unchanged copies in tests/compat/caffe-models, NVIDIA's under nvidia/), builds and runs forward and
// backward, in each phase it has, on the CPU and on the GPU (backward in the TRAIN phase). Train/test
// nets read generated databases of the shapes their sources name (MNIST 1×28×28, siamese pairs
// 2×28×28, CIFAR 3×32×32, ImageNet 3×256×256) with mean files of the matching size; deploy nets start
// from their Input layer or legacy input_dim. The batch is cut to 2 so that ResNet-101 runs in seconds
// on a laptop CPU — every layer and shape past the batch axis is Caffe's. On the GPU, each net in its
// TEST phase (no dropout, batch norm on stored statistics, centre crops), fresh on both devices, also
// gives the CPU's outputs with the CPU's weights. With memory reuse on and off, each net trains (or,
// deploy nets, differentiates) to the same bytes. NVIDIA's nets train with their precision, loss scale
// and BatchNorm scale_bias.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>

#include "cortado/image.hpp"  // BuiltWithImageSupport
#include "cortado/io.hpp"
#include "cortado/net.hpp"
#include "cortado/solver.hpp"
#include "cortado/upgrade.hpp"
#include "gpu/gpu_compare.hpp"
#include "test_util.hpp"

namespace cortado::test {
namespace {

namespace fs = std::filesystem;

constexpr int kBatch = 2;

struct ImageShape {
  int channels, size;
};

// The records a data source of Caffe's examples holds, by the name of its database.
ImageShape ShapeForSource(const std::string& source) {
  if (source.find("siamese") != std::string::npos) return {2, 28};
  if (source.find("mnist") != std::string::npos) return {1, 28};
  if (source.find("cifar") != std::string::npos) return {3, 32};
  if (source.find("ilsvrc12") != std::string::npos || source.find("imagenet") != std::string::npos) return {3, 256};
  ADD_FAILURE() << "no known shape for data source " << source;
  return {1, 28};
}

std::vector<std::string> NetPrototxts() {
  std::vector<std::string> files;
  const std::string root = SourceDir() + "/tests/compat/caffe-models";
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() == ".prototxt" && name.find("solver") == std::string::npos)
      files.push_back(fs::relative(entry.path(), root).string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Rewrites `param` (already upgraded) to run here: data sources and mean files point at generated
// ones in `dir`, batches are kBatch.
void Localize(NetParameter* param, const std::string& dir) {
  std::map<std::string, std::string> made;  // original source -> generated database
  auto database = [&](const std::string& source) {
    auto it = made.find(source);
    if (it != made.end()) return it->second;
    const ImageShape shape = ShapeForSource(source);
    const std::string path = dir + "/db" + std::to_string(made.size());
    WriteRandomImageLmdb(path, 2 * kBatch + 1, shape.channels, shape.size, 10, static_cast<uint32_t>(made.size() + 1));
    return made[source] = path;
  };
  for (int i = 0; i < param->input_shape_size(); ++i) param->mutable_input_shape(i)->set_dim(0, kBatch);
  if (param->input_dim_size() > 0) param->set_input_dim(0, kBatch);
  for (LayerParameter& layer : *param->mutable_layer()) {
    if (layer.has_input_param())
      for (BlobShape& shape : *layer.mutable_input_param()->mutable_shape()) shape.set_dim(0, kBatch);
    if (!layer.has_data_param()) continue;
    DataParameter* data = layer.mutable_data_param();
    const std::string original = data->source();
    data->set_source(database(original));
    data->set_backend(DataParameter::LMDB);
    data->set_batch_size(kBatch);
    TransformationParameter* transform = layer.mutable_transform_param();
    if (transform->has_mean_file()) {
      const ImageShape shape = ShapeForSource(original);
      BlobProto mean;
      for (int d : {1, shape.channels, shape.size, shape.size}) mean.mutable_shape()->add_dim(d);
      for (int k = 0; k < shape.channels * shape.size * shape.size; ++k) mean.add_data(100.0f + k % 50);
      const std::string mean_path = dir + "/mean" + std::to_string(made.size()) + ".binaryproto";
      WriteProtoToBinaryFile(mean, mean_path);
      transform->set_mean_file(mean_path);
    }
  }
}

NetParameter LoadNet(const std::string& relative, const std::string& dir, Phase phase) {
  NetParameter param;
  ReadProtoFromTextFile(SourceDir() + "/tests/compat/caffe-models/" + relative, &param);
  if (NetNeedsUpgrade(param)) UpgradeNet(&param, relative);
  const std::string phase_dir = dir + (phase == TRAIN ? "/train" : "/test");
  fs::create_directories(phase_dir);
  Localize(&param, phase_dir);
  param.set_force_backward(true);  // deploy nets have no loss: backward still runs every layer
  param.mutable_state()->set_phase(phase);
  // A net whose layers are chosen by stage (mnist_autoencoder's test-on-train / test-on-test) runs
  // in the first stage its rules name, as its solver's test_state would choose.
  for (const LayerParameter& layer : param.layer())
    for (const NetStateRule& rule : layer.include())
      if (rule.phase() == phase && rule.stage_size() > 0 && param.state().stage_size() == 0)
        param.mutable_state()->add_stage(rule.stage(0));
  return param;
}

// Whether a net's data layers resize or stretch their images (NVIDIA's fp16 nets), which a build
// without OpenCV refuses at set-up.
bool ResizesImages(const std::string& relative) {
  NetParameter param;
  ReadProtoFromTextFile(SourceDir() + "/tests/compat/caffe-models/" + relative, &param);
  for (const LayerParameter& layer : param.layer()) {
    const TransformationParameter& t = layer.transform_param();
    if (t.img_rand_resize_lower() > 0 || t.img_rand_resize_upper() > 0 || t.has_vertical_stretch_lower() ||
        t.has_vertical_stretch_upper() || t.has_horizontal_stretch_lower() || t.has_horizontal_stretch_upper())
      return true;
  }
  return false;
}

#define SKIP_IF_IT_RESIZES_WITHOUT_OPENCV(relative)                                                          \
  if (ResizesImages(relative) && !BuiltWithImageSupport())                                                 \
  GTEST_SKIP() << relative << " resizes its images, which needs a build with OpenCV (libopencv-dev)"

bool IsDeploy(const NetParameter& param) {
  for (const LayerParameter& layer : param.layer())
    if (layer.has_data_param()) return false;
  return true;
}

// Runs forward, and in the TRAIN phase backward, once; checks the loss, outputs and every learnable
// gradient are finite, and that a training net's backward reaches its parameters.
void ForwardBackward(Net& net, bool trains) {
  const float loss = net.Forward();
  EXPECT_TRUE(std::isfinite(loss)) << "loss " << loss;
  for (const Blob* out : net.output_blobs())
    for (float v : out->ReadData()) ASSERT_TRUE(std::isfinite(v)) << "non-finite output";
  if (net.phase() != TRAIN) return;
  net.ClearParamDiffs();
  net.Backward();
  double gradient_sum = 0;
  for (const Blob* p : net.learnable_params())
    for (float g : p->ReadDiff()) {
      ASSERT_TRUE(std::isfinite(g)) << "non-finite gradient";
      gradient_sum += std::fabs(g);
    }
  if (trains) EXPECT_GT(gradient_sum, 0.0) << "backward reached no parameter";
}

class CaffeModelRuns : public ::testing::TestWithParam<std::string> {};

TEST_P(CaffeModelRuns, BuildsAndRunsForwardBackwardOnTheCpu) {
  SKIP_IF_IT_RESIZES_WITHOUT_OPENCV(GetParam());
  const std::string dir = TempDir();
  for (Phase phase : {TRAIN, TEST}) {
    SCOPED_TRACE(phase == TRAIN ? "TRAIN" : "TEST");
    const NetParameter param = LoadNet(GetParam(), dir, phase);
    if (phase == TEST && IsDeploy(param)) continue;  // the same net twice
    Context ctx(Device::kCPU, 1);
    Net net(param, ctx, GetParam());
    net.AllocateOwnArena();
    FillTrainedLikeWeights(net, 7);
    ForwardBackward(net, phase == TRAIN && !IsDeploy(param));
  }
}

// Memory reuse changes where buffers live, never a result: training nets take three SGD steps (the
// same records, dropout masks and fillers) and write byte-identical weights with reuse on and off;
// deploy nets give identical outputs and, from ones as output gradients, identical weight gradients.
std::string TrainedWeights(const NetParameter& net, bool reuse) {
  SolverParameter param;
  *param.mutable_train_net_param() = net;
  param.mutable_train_net_param()->set_memory_reuse(reuse);
  param.set_base_lr(0.001f);
  param.set_momentum(0.9f);
  param.set_lr_policy("fixed");
  param.set_max_iter(3);
  param.set_random_seed(3);
  param.set_display(0);
  Solver solver(param);
  solver.Step(3);
  NetParameter trained;
  solver.net()->ToProto(&trained);
  return trained.SerializeAsString();
}

std::vector<std::vector<float>> DeployGradients(NetParameter param, bool reuse) {
  param.set_memory_reuse(reuse);
  Context ctx(Device::kCPU, 1);
  Net net(param, ctx, "deploy");
  net.AllocateOwnArena();
  FillTrainedLikeWeights(net, 7);
  std::vector<std::vector<float>> values;
  net.Forward();
  for (Blob* out : net.output_blobs()) {
    values.push_back(out->ReadData());
    out->WriteDiff(std::vector<float>(static_cast<size_t>(out->count()), 1.0f));
  }
  net.Backward();
  for (const Blob* p : net.learnable_params()) values.push_back(p->ReadDiff());
  return values;
}

TEST_P(CaffeModelRuns, MemoryReuseOnAndOffGiveTheSameBytes) {
  SKIP_IF_IT_RESIZES_WITHOUT_OPENCV(GetParam());
  const NetParameter param = LoadNet(GetParam(), TempDir(), TRAIN);
  if (IsDeploy(param)) {
    EXPECT_TRUE(DeployGradients(param, true) == DeployGradients(param, false));
    return;
  }
  NetParameter trains(param);
  trains.set_force_backward(false);
  const std::string with = TrainedWeights(trains, true);
  EXPECT_TRUE(with == TrainedWeights(trains, false)) << "the weights differ after three steps";
}

// The comparison uses fresh nets (the nets that ran above have read records past the first batch) in
// the TEST phase (deploy nets too: their Dropout would draw different masks on the two devices), once
// in strict FP32 (element by element) and once with TF32 where the GPU has it (in norm).
TEST_P(CaffeModelRuns, RunsOnTheGpuAndTestNetsMatchTheCpu) {
  SKIP_WITHOUT_GPU();
  SKIP_IF_IT_RESIZES_WITHOUT_OPENCV(GetParam());
  const std::string dir = TempDir();
  for (Phase phase : {TRAIN, TEST}) {
    SCOPED_TRACE(phase == TRAIN ? "TRAIN" : "TEST");
    const NetParameter param = LoadNet(GetParam(), dir, phase);
    if (phase == TEST && IsDeploy(param)) continue;
    Context gpu_ctx(Device::kGPU, 1);
    Net gpu(param, gpu_ctx, GetParam());
    gpu.AllocateOwnArena();
    FillTrainedLikeWeights(gpu, 7);
    ForwardBackward(gpu, phase == TRAIN && !IsDeploy(param));
  }
  const NetParameter param = LoadNet(GetParam(), dir + "/compare", TEST);
  Context cpu_ctx(Device::kCPU, 1);
  Net cpu(param, cpu_ctx, GetParam());
  cpu.AllocateOwnArena();
  FillTrainedLikeWeights(cpu, 7);
  cpu.Forward();
  for (const bool strict : {true, false}) {
    SCOPED_TRACE(strict ? "strict FP32" : "TF32 where the GPU has it");
    Context gpu_ctx(Device::kGPU, 1);
    GpuSettings settings;
    settings.strict_fp32 = strict;
    gpu_ctx.SetGpuSettings(settings);
    Net gpu(param, gpu_ctx, GetParam());
    gpu.AllocateOwnArena();
    FillTrainedLikeWeights(gpu, 7);
    gpu.Forward();
    gpu_ctx.Synchronize();
    ASSERT_EQ(gpu.output_blobs().size(), cpu.output_blobs().size());
    // A mixed-precision net (NVIDIA's fp16 nets) rounds every layer's float result to 16 bits, so one
    // rounding that falls the other way on the GPU carries through the net: compared as TF32 is.
    const float tolerance = cpu.mixed_precision() ? 3e-2f : 1e-3f;
    for (size_t o = 0; o < cpu.output_blobs().size(); ++o)
      ExpectGpuClose(gpu_ctx, gpu.output_blobs()[o]->ReadData(), cpu.output_blobs()[o]->ReadData(), tolerance,
                     "output " + std::to_string(o), /*tf32_relative=*/3e-2f);
  }
}

// NVIDIA Caffe's fp16 training nets, with only their data sources and mean files changed (Localize),
// train two steps with what they ask for: fp16 storage past the data layer, their loss scale (static,
// or adaptive: NVIDIA's K · 4 / the largest gradient), and BatchNorm's own γ and β (scale_bias) in
// the ResNets; crops of 224 or 227 from 256-pixel images through their random resize and stretch.
TEST(NvidiaFp16Nets, TrainWithTheirPrecisionLossScaleAndBatchNormScaleBias) {
  for (const std::string model : {"resnet50", "resnet18", "bvlc_alexnet", "bvlc_googlenet"}) {
    SCOPED_TRACE(model);
    const std::string file = "nvidia/" + model + "/train_val_fp16.prototxt";
    if (ResizesImages(file) && !BuiltWithImageSupport()) {
      std::printf("%s: skipped, it resizes its images, which needs a build with OpenCV\n", file.c_str());
      continue;
    }
    SolverParameter param;
    ReadProtoFromTextString("base_lr: 0.001 momentum: 0.9 lr_policy: 'fixed' max_iter: 2 random_seed: 3 display: 0 "
                            "solver_mode: CPU snapshot_after_train: false",
                            &param);
    *param.mutable_train_net_param() = LoadNet(file, TempDir() + "/" + model, TRAIN);
    NetParameter& net_param = *param.mutable_train_net_param();
    net_param.set_force_backward(false);
    EXPECT_EQ(net_param.default_forward_type(), FLOAT16);
    Solver solver(param);
    Net& net = *solver.net();
    EXPECT_TRUE(net.mixed_precision());
    EXPECT_EQ(net.blob_by_name("data")->data_type(), DataType::kFloat);  // data layers keep float
    EXPECT_EQ(net.blob_by_name("data")->shape(2), model == "bvlc_alexnet" ? 227 : 224);
    int convolutions = 0, fp16_tops = 0, scale_bias = 0, five_blobs = 0;
    for (const LayerParameter& layer : net_param.layer()) {
      if (layer.type() == "Convolution") {
        ++convolutions;
        fp16_tops += net.blob_by_name(layer.top(0))->data_type() == DataType::kFloat16;
      }
      if (layer.type() == "BatchNorm" && layer.batch_norm_param().scale_bias()) {
        ++scale_bias;
        five_blobs += net.layer_by_name(layer.name())->blobs().size() == 5;
      }
    }
    EXPECT_GT(convolutions, 0);
    EXPECT_EQ(fp16_tops, convolutions);
    EXPECT_EQ(five_blobs, scale_bias);
    if (model == "resnet50") EXPECT_EQ(scale_bias, 53);
    const bool adaptive = net_param.global_grad_scale_adaptive();
    EXPECT_EQ(net.loss_scale(), adaptive ? 1.0f : net_param.global_grad_scale());
    const std::vector<float> before(net.param_data(), net.param_data() + net.param_count());
    solver.Step(2);
    EXPECT_TRUE(std::isfinite(solver.smoothed_loss()));
    const std::vector<float> after(net.param_data(), net.param_data() + net.param_count());
    EXPECT_NE(after, before);
    for (float w : after) ASSERT_TRUE(std::isfinite(w));
    if (adaptive) EXPECT_NE(net.loss_scale(), 1.0f);  // K · 4 / the largest gradient of the last step
  }
}

std::string TestName(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param.substr(0, info.param.size() - std::string(".prototxt").size());
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(EveryNet, CaffeModelRuns, ::testing::ValuesIn(NetPrototxts()), TestName);

}  // namespace
}  // namespace cortado::test
