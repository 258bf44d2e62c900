// net_fusion_test.cpp — chains the Net runs fused (net.hpp, src/layers/fusion.hpp) against the same net
// run layer by layer (fuse: false), on the CPU: small nets covering each form of the BatchNorm chain
// (Scale with and without β, ReLU, Sigmoid, none; in place and out of place; batch and global
// statistics; a BatchNorm with scale_bias, its γ and β in the Scale's place) and the Eltwise SUM → ReLU chain give the same loss, outputs, running statistics and gradients within float rounding;
// Caffe's cifar10_full_sigmoid_bn and ResNet-50 (made a training net at a small batch) train 20 SGD
// steps to the same weights within float tolerance; the chains are really found (ResNet-50's 53), the
// weights files of both runs have the same layers and blobs, and the rules fall back to layer by layer
// where a fused pass would not write what a reader expects (an intermediate blob kept readable, a
// range that cuts a chain, x̂ that an in-place Scale would overwrite).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "cortado/io.hpp"
#include "cortado/net.hpp"
#include "cortado/solver.hpp"
#include "cortado/upgrade.hpp"
#include "test_util.hpp"

namespace cortado::test {
namespace {

// A conv feeding `chain` (prototxt layers reading "conv" and ending in a top named "chained"), then an
// InnerProduct and a softmax loss over 5 classes; input data 4×3×6×6, labels given.
NetParameter SmallNet(const std::string& chain) {
  return ParseNet(R"(
    name: "small" force_backward: true
    layer { name: "in" type: "Input" top: "data" top: "label"
            input_param { shape { dim: 4 dim: 3 dim: 6 dim: 6 } shape { dim: 4 } } }
    layer { name: "conv" type: "Convolution" bottom: "data" top: "conv"
            convolution_param { num_output: 8 kernel_size: 3 pad: 1 bias_term: false } }
  )" + chain + R"(
    layer { name: "ip" type: "InnerProduct" bottom: "chained" top: "ip" inner_product_param { num_output: 5 } }
    layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
  )");
}

// What one forward (and backward, in TRAIN) pass leaves: the loss, then every parameter blob's data
// (BatchNorm's running statistics included) and, after backward, every parameter's and the input's diff.
// The chains `net` runs fused.
int CountChains(const Net& net) {
  int chains = 0;
  for (int i = 0; i < static_cast<int>(net.layers().size()); ++i) {
    const Layer* fused = net.fused_layer_at(i);
    chains += fused != nullptr && (i == 0 || net.fused_layer_at(i - 1) != fused);
  }
  return chains;
}

struct PassValues {
  std::vector<std::vector<float>> values;
  int fused_chains = 0;
};

PassValues RunPass(NetParameter param, bool fuse, Phase phase) {
  param.set_fuse(fuse);
  param.mutable_state()->set_phase(phase);
  param.set_force_backward(phase == TRAIN);
  Context ctx(Device::kCPU, 1);
  Net net(param, ctx, "test.prototxt");
  net.AllocateOwnArena();
  FillTrainedLikeWeights(net, 5);
  std::mt19937 rng(3);
  FillGaussian(net.blob_by_name("data"), rng, 0.5f, 2.0f);
  net.blob_by_name("label")->WriteData({0, 3, 1, 4});
  PassValues out;
  out.fused_chains = CountChains(net);
  out.values.push_back({net.Forward()});
  for (const Blob* p : net.params()) out.values.push_back(p->ReadData());
  if (phase == TRAIN) {
    net.ClearParamDiffs();
    net.Backward();
    for (const Blob* p : net.learnable_params()) out.values.push_back(p->ReadDiff());
    out.values.push_back(net.blob_by_name("data")->ReadDiff());
  }
  return out;
}

// Each value within `tolerance` of the other run's, relative to the largest magnitude of its blob.
void ExpectClose(const std::vector<std::vector<float>>& fused, const std::vector<std::vector<float>>& layers,
                 double tolerance) {
  ASSERT_EQ(fused.size(), layers.size());
  for (size_t k = 0; k < fused.size(); ++k) {
    ASSERT_EQ(fused[k].size(), layers[k].size()) << "blob " << k;
    double scale = 1e-6;
    for (float v : layers[k]) scale = std::max(scale, static_cast<double>(std::fabs(v)));
    double worst = 0;
    for (size_t i = 0; i < fused[k].size(); ++i) {
      ASSERT_TRUE(std::isfinite(fused[k][i])) << "blob " << k << " value " << i;
      worst = std::max(worst, std::fabs(static_cast<double>(fused[k][i]) - layers[k][i]) / scale);
    }
    EXPECT_LE(worst, tolerance) << "blob " << k << " (of " << fused.size() << "), largest magnitude " << scale;
  }
}

struct ChainCase {
  const char* name;
  const char* chain;
  Phase phase;
  int expected_chains;  // how many the rules fuse
};

class BatchNormChains : public ::testing::TestWithParam<ChainCase> {};

TEST_P(BatchNormChains, FusedGivesWhatTheLayersGive) {
  const ChainCase& c = GetParam();
  const NetParameter param = SmallNet(c.chain);
  const PassValues fused = RunPass(param, true, c.phase);
  const PassValues layers = RunPass(param, false, c.phase);
  EXPECT_EQ(fused.fused_chains, c.expected_chains);
  EXPECT_EQ(layers.fused_chains, 0);
  ExpectClose(fused.values, layers.values, 2e-5);
}

// ResNet's own form: every layer in place on the convolution's top.
const char* const kInPlaceResNetChain = R"(
      layer { name: "bn" type: "BatchNorm" bottom: "conv" top: "conv" }
      layer { name: "scale" type: "Scale" bottom: "conv" top: "conv" scale_param { bias_term: true } }
      layer { name: "relu" type: "ReLU" bottom: "conv" top: "conv" }
      layer { name: "copy" type: "Power" bottom: "conv" top: "chained" })";

const ChainCase kChains[] = {
    {"ResNetStyleInPlace", kInPlaceResNetChain, TRAIN, 1},
    {"ResNetStyleInTest", kInPlaceResNetChain, TEST, 1},
    {"OutOfPlaceSigmoidWithoutScale", R"(
      layer { name: "bn" type: "BatchNorm" bottom: "conv" top: "bn" }
      layer { name: "sigmoid" type: "Sigmoid" bottom: "bn" top: "chained" })",
     TRAIN, 1},
    {"ScaleWithoutBiasNorActivation", R"(
      layer { name: "bn" type: "BatchNorm" bottom: "conv" top: "bn" }
      layer { name: "scale" type: "Scale" bottom: "bn" top: "chained" })",
     TRAIN, 1},
    {"LeakyReLUAfterScale", R"(
      layer { name: "bn" type: "BatchNorm" bottom: "conv" top: "bn" }
      layer { name: "scale" type: "Scale" bottom: "bn" top: "scaled" scale_param { bias_term: true } }
      layer { name: "relu" type: "ReLU" bottom: "scaled" top: "scaled" relu_param { negative_slope: 0.1 } }
      layer { name: "copy" type: "Power" bottom: "scaled" top: "chained" })",
     TRAIN, 1},
    // An out-of-place ReLU after a Scale would leave the Scale's own top unwritten: BatchNorm and Scale
    // fuse, the ReLU runs on its own.
    {"OutOfPlaceReLUAfterScaleRunsOnItsOwn", R"(
      layer { name: "bn" type: "BatchNorm" bottom: "conv" top: "bn" }
      layer { name: "scale" type: "Scale" bottom: "bn" top: "scaled" scale_param { bias_term: true } }
      layer { name: "relu" type: "ReLU" bottom: "scaled" top: "chained" })",
     TRAIN, 1},
    // Global statistics while training: BatchNorm's backward does not read its top, so the Scale runs in
    // place over x̂, which the fused backward pass would need: the layers run one by one.
    {"GlobalStatisticsWhileTrainingRunLayerByLayer", R"(
      layer { name: "bn" type: "BatchNorm" bottom: "conv" top: "conv" batch_norm_param { use_global_stats: true } }
      layer { name: "scale" type: "Scale" bottom: "conv" top: "conv" scale_param { bias_term: true } }
      layer { name: "relu" type: "ReLU" bottom: "conv" top: "conv" }
      layer { name: "copy" type: "Power" bottom: "conv" top: "chained" })",
     TRAIN, 0},
    {"EltwiseSumThenReLU", R"(
      layer { name: "branch" type: "Convolution" bottom: "conv" top: "branch" convolution_param { num_output: 8 kernel_size: 1 } }
      layer { name: "sum" type: "Eltwise" bottom: "conv" bottom: "branch" top: "sum" eltwise_param { coeff: 1 coeff: -0.5 } }
      layer { name: "relu" type: "ReLU" bottom: "sum" top: "sum" }
      layer { name: "copy" type: "Power" bottom: "sum" top: "chained" })",
     TRAIN, 1},
    // NVIDIA Caffe's form: a BatchNorm with scale_bias (γ and β its own) out of place, the ReLU in place on
    // its top; x̂ is kept in the BatchNorm's own buffer, so it fuses in training too, with global statistics
    // as well.
    {"ScaleBiasThenReLUInPlace", R"(
      layer { name: "bn" type: "BatchNorm" bottom: "conv" top: "bn" batch_norm_param { scale_bias: true } }
      layer { name: "relu" type: "ReLU" bottom: "bn" top: "bn" }
      layer { name: "copy" type: "Power" bottom: "bn" top: "chained" })",
     TRAIN, 1},
    {"ScaleBiasThenReLUInTest", R"(
      layer { name: "bn" type: "BatchNorm" bottom: "conv" top: "bn" batch_norm_param { scale_bias: true } }
      layer { name: "relu" type: "ReLU" bottom: "bn" top: "bn" }
      layer { name: "copy" type: "Power" bottom: "bn" top: "chained" })",
     TEST, 1},
    {"ScaleBiasAllInPlaceWithGlobalStatisticsWhileTraining", R"(
      layer { name: "bn" type: "BatchNorm" bottom: "conv" top: "conv"
              batch_norm_param { scale_bias: true use_global_stats: true } }
      layer { name: "sigmoid" type: "Sigmoid" bottom: "conv" top: "conv" }
      layer { name: "copy" type: "Power" bottom: "conv" top: "chained" })",
     TRAIN, 1},
    // The ReLU out of place would leave the BatchNorm's own top unwritten: each runs on its own.
    {"ScaleBiasThenOutOfPlaceReLURunsLayerByLayer", R"(
      layer { name: "bn" type: "BatchNorm" bottom: "conv" top: "bn" batch_norm_param { scale_bias: true } }
      layer { name: "relu" type: "ReLU" bottom: "bn" top: "chained" })",
     TRAIN, 0},
    // A Scale after a BatchNorm with scale_bias scales twice; it is not fused into the chain.
    {"ScaleBiasThenScaleRunsLayerByLayer", R"(
      layer { name: "bn" type: "BatchNorm" bottom: "conv" top: "bn" batch_norm_param { scale_bias: true } }
      layer { name: "scale" type: "Scale" bottom: "bn" top: "bn" scale_param { bias_term: true } }
      layer { name: "relu" type: "ReLU" bottom: "bn" top: "bn" }
      layer { name: "copy" type: "Power" bottom: "bn" top: "chained" })",
     TRAIN, 0},
    // A BatchNorm top read by two layers goes through a Split: nothing to fuse.
    {"ATopReadTwiceIsNotFused", R"(
      layer { name: "bn" type: "BatchNorm" bottom: "conv" top: "bn" }
      layer { name: "relu" type: "ReLU" bottom: "bn" top: "relu" }
      layer { name: "sum" type: "Eltwise" bottom: "bn" bottom: "relu" top: "chained" })",
     TRAIN, 0},
};

INSTANTIATE_TEST_SUITE_P(Forms, BatchNormChains, ::testing::ValuesIn(kChains),
                         [](const ::testing::TestParamInfo<ChainCase>& info) { return std::string(info.param.name); });

// ---- whole nets trained 20 steps, fused and not ----------------------------------------------------

// The parameters (learned and running) after `steps` SGD steps of `param` (fuse set as given), from
// FillTrainedLikeWeights' values — each learned value one float step up when `nudge`.
std::vector<std::vector<float>> Train(SolverParameter param, bool fuse, int steps, int* fused_chains,
                                      bool nudge = false) {
  param.set_fuse(fuse);
  param.set_display(0);
  param.set_random_seed(11);
  param.set_solver_mode(SolverParameter::CPU);
  param.set_snapshot_after_train(false);
  param.clear_test_iter();
  param.clear_test_interval();
  Solver solver(param);
  FillTrainedLikeWeights(*solver.net(), 7);
  if (nudge)
    for (Blob* p : solver.net()->learnable_params()) {
      std::vector<float> values = p->ReadData();
      for (float& v : values) v = std::nextafter(v, 2 * v + 1);
      p->WriteData(values);
    }
  *fused_chains = CountChains(*solver.net());
  solver.Step(steps);
  std::vector<std::vector<float>> values;
  for (const Blob* p : solver.net()->params()) values.push_back(p->ReadData());
  return values;
}

// ‖a − b‖ / ‖b‖ over all values.
double RelativeDistance(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b) {
  double diff = 0, norm = 0;
  for (size_t k = 0; k < a.size(); ++k)
    for (size_t i = 0; i < a[k].size(); ++i) {
      diff += (static_cast<double>(a[k][i]) - b[k][i]) * (static_cast<double>(a[k][i]) - b[k][i]);
      norm += static_cast<double>(b[k][i]) * b[k][i];
    }
  return std::sqrt(diff / norm);
}

SolverParameter SgdOn(const NetParameter& net, float base_lr) {
  SolverParameter param;
  *param.mutable_train_net_param() = net;
  param.set_base_lr(base_lr);
  param.set_momentum(0.9f);
  param.set_lr_policy("fixed");
  param.set_max_iter(20);
  return param;
}

TEST(NetFusion, Cifar10FullSigmoidBnTrainsToTheSameWeightsFusedAndLayerByLayer) {
  NetParameter net;
  ReadProtoFromTextFile(SourceDir() + "/models/cifar10/cifar10_full_sigmoid_train_test_bn.prototxt", &net);
  const std::string db = WriteRandomImageLmdb(TempDir() + "/cifar", 96, 3, 32, 10, 1);
  for (LayerParameter& layer : *net.mutable_layer()) {
    if (!layer.has_data_param()) continue;
    layer.mutable_data_param()->set_source(db);
    layer.mutable_data_param()->set_batch_size(32);
    layer.mutable_transform_param()->clear_mean_file();
    layer.mutable_transform_param()->set_scale(1.0f / 64);
  }
  SolverParameter solver;  // the shipped solver's recipe: SGD, lr 0.001, momentum 0.9
  ReadProtoFromTextFile(SourceDir() + "/models/cifar10/cifar10_full_sigmoid_solver_bn.prototxt", &solver);
  solver.clear_net();
  *solver.mutable_train_net_param() = net;
  solver.set_max_iter(20);
  int fused = 0, unfused = 0;
  const auto with = Train(solver, true, 20, &fused);
  const auto without = Train(solver, false, 20, &unfused);
  EXPECT_EQ(fused, 3);  // bn1+Sigmoid1, bn2+Sigmoid2, bn3+Sigmoid3
  EXPECT_EQ(unfused, 0);
  ExpectClose(with, without, 1e-4);
}

// Caffe's ResNet-50 deploy net made a training net: DummyData (Gaussian images, labels in [0, 1000)),
// batch statistics (use_global_stats cleared, as a training prototxt has them), pool5 global (for the
// small input; at 224×224 it is the same 7×7 window), and a softmax loss in place of `prob`.
NetParameter ResNet50Training(int batch, int size) {
  NetParameter deploy;
  ReadProtoFromTextFile(SourceDir() + "/tests/compat/caffe-models/resnet/ResNet-50-deploy.prototxt", &deploy);
  if (NetNeedsUpgrade(deploy)) UpgradeNet(&deploy, "ResNet-50-deploy.prototxt");
  NetParameter net = ParseNet(R"(
    layer { name: "data" type: "DummyData" top: "data" top: "label"
            dummy_data_param { data_filler { type: "gaussian" std: 1 } data_filler { type: "uniform" min: 0 max: 999 }
                               shape { dim: )" + std::to_string(batch) + " dim: 3 dim: " + std::to_string(size) +
                              " dim: " + std::to_string(size) + " } shape { dim: " + std::to_string(batch) + R"( } } })");
  net.set_name("ResNet-50");
  for (const LayerParameter& layer : deploy.layer()) {
    if (layer.type() == "Input" || layer.name() == "prob") continue;
    LayerParameter* copy = net.add_layer();
    *copy = layer;
    if (copy->type() == "BatchNorm") copy->mutable_batch_norm_param()->clear_use_global_stats();
    if (copy->name() == "pool5") {
      copy->mutable_pooling_param()->clear_kernel_size();
      copy->mutable_pooling_param()->set_global_pooling(true);
    }
  }
  LayerParameter* loss = net.add_layer();
  loss->set_name("loss");
  loss->set_type("SoftmaxWithLoss");
  loss->add_bottom("fc1000");
  loss->add_bottom("label");
  loss->add_top("loss");
  return net;
}

// ResNet-50 at batch 2 magnifies rounding: one pass with another convolution engine (im2col against
// oneDNN) already moves some gradients by 10% (a ReLU input near 0 that flips, a channel sum that
// nearly cancels), and 20 steps carry that into the weights. So the tolerance is measured, not
// guessed: the fused run may differ from the layer-by-layer run no more than a layer-by-layer run
// started one float step away (every learned value nudged up by one ulp) does.
TEST(NetFusion, ResNet50TrainsToTheSameWeightsFusedAndLayerByLayer) {
  const SolverParameter solver = SgdOn(ResNet50Training(2, 64), 0.001f);
  int fused = 0, unfused = 0, nudged_chains = 0;
  const auto with = Train(solver, true, 20, &fused);
  const auto without = Train(solver, false, 20, &unfused);
  const auto nudged = Train(solver, false, 20, &nudged_chains, true);
  EXPECT_EQ(fused, 53 + 16);  // every BatchNorm with its Scale (and the ReLU where one follows); every sum with its ReLU
  EXPECT_EQ(unfused, 0);
  const double fusion = RelativeDistance(with, without), rounding = RelativeDistance(nudged, without);
  EXPECT_GT(rounding, 0.0);
  EXPECT_LT(rounding, 1.0) << "the training diverged: the comparison says nothing";
  EXPECT_LE(fusion, 2 * rounding) << "fused against layer by layer: " << fusion << "; one ulp apart: " << rounding;
  std::printf("ResNet-50, 20 steps: fused vs layer by layer %.3g, layer by layer one ulp apart %.3g\n", fusion,
              rounding);
}

// ---- where the rules fall back to layer by layer ------------------------------------------------------

const char* const kResNetChain = R"(
  layer { name: "bn" type: "BatchNorm" bottom: "conv" top: "bn" }
  layer { name: "scale" type: "Scale" bottom: "bn" top: "scaled" scale_param { bias_term: true } }
  layer { name: "relu" type: "ReLU" bottom: "scaled" top: "scaled" }
  layer { name: "copy" type: "Power" bottom: "scaled" top: "chained" })";

// Net, allocated, with the weights and data RunPass gives.
struct SmallRun {
  explicit SmallRun(bool fuse, const std::vector<std::string>& keep = {}) {
    NetParameter param = SmallNet(kResNetChain);
    param.set_fuse(fuse);
    net = std::make_unique<Net>(param, ctx, "test.prototxt");
    net->KeepReadable(keep);
    net->AllocateOwnArena();
    FillTrainedLikeWeights(*net, 5);
    std::mt19937 rng(3);
    FillGaussian(net->blob_by_name("data"), rng, 0.5f, 2.0f);
    net->blob_by_name("label")->WriteData({0, 3, 1, 4});
  }
  Context ctx{Device::kCPU, 1};
  std::unique_ptr<Net> net;
};

TEST(NetFusion, AnIntermediateBlobKeptReadableRunsItsChainLayerByLayer) {
  SmallRun kept(true, {"bn"});
  EXPECT_EQ(CountChains(*kept.net), 0);  // bn's diff is written only layer by layer
  SmallRun layers(false, {"bn"});
  for (SmallRun* run : {&kept, &layers}) {
    run->net->Forward();
    run->net->Backward();
  }
  ExpectClose({kept.net->blob_by_name("bn")->ReadDiff()}, {layers.net->blob_by_name("bn")->ReadDiff()}, 0);
  SmallRun output(true, {"scaled"});  // the chain's last top: the fused layer writes it
  EXPECT_EQ(CountChains(*output.net), 1);
}

TEST(NetFusion, ARangeThatCutsAChainRunsItLayerByLayer) {
  SmallRun fused(true), layers(false);
  ASSERT_EQ(CountChains(*fused.net), 1);
  const int bn = 2, scale = 3;
  ASSERT_EQ(fused.net->layer_names()[bn], "bn");
  // Forward up to the Scale: the chain is cut, so BatchNorm and Scale run and the ReLU has not.
  for (SmallRun* run : {&fused, &layers}) run->net->ForwardFromTo(0, scale);
  ExpectClose({fused.net->blob_by_name("scaled")->ReadData()}, {layers.net->blob_by_name("scaled")->ReadData()},
              0);
  float lowest = 0;
  for (float v : fused.net->blob_by_name("scaled")->ReadData()) lowest = std::min(lowest, v);
  EXPECT_LT(lowest, 0.0f) << "the ReLU ran";
  // The rest from the ReLU on, then backward in two ranges that cut the chain: the same gradients.
  for (SmallRun* run : {&fused, &layers}) {
    run->net->ForwardFromTo(scale + 1, static_cast<int>(run->net->layers().size()) - 1);
    run->net->ClearParamDiffs();
    run->net->BackwardFromTo(static_cast<int>(run->net->layers().size()) - 1, scale);
    run->net->BackwardFromTo(bn, 0);
  }
  std::vector<std::vector<float>> a, b;
  for (const Blob* p : fused.net->learnable_params()) a.push_back(p->ReadDiff());
  for (const Blob* p : layers.net->learnable_params()) b.push_back(p->ReadDiff());
  ExpectClose(a, b, 0);
}

TEST(NetFusion, WeightsFilesAreTheSameLayersAndBlobsFusedOrNot) {
  SmallRun fused(true), layers(false);
  fused.net->Forward();
  NetParameter written;
  fused.net->ToProto(&written);
  NetParameter plain;
  layers.net->ToProto(&plain);
  ASSERT_EQ(written.layer_size(), plain.layer_size());
  for (int i = 0; i < written.layer_size(); ++i) {
    EXPECT_EQ(written.layer(i).name(), plain.layer(i).name());
    EXPECT_EQ(written.layer(i).blobs_size(), plain.layer(i).blobs_size()) << written.layer(i).name();
  }
  // The fused net's weights (its running statistics updated by one pass) load into the plain net.
  EXPECT_EQ(layers.net->CopyTrainedLayersFrom(written), 4);  // conv, bn, scale, ip
  EXPECT_EQ(layers.net->layer_by_name("bn")->blobs()[2]->ReadData(), fused.net->layer_by_name("bn")->blobs()[2]->ReadData());
}

}  // namespace
}  // namespace cortado::test
