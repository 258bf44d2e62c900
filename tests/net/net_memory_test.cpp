// net_memory_test.cpp — the memory plan: packing lifetimes, in-place chains that stay correct, blobs
// that stay readable, the reuse switch, divergence found under reuse, and plans made for a GPU
// without one.
#include <algorithm>
#include <random>

#include "cortado/divergence.hpp"
#include "cortado/io.hpp"
#include "cortado/memory.hpp"
#include "cortado/net.hpp"
#include "cortado/solver.hpp"
#include "test_util.hpp"

namespace cortado::test {
namespace {

// ---- PackByLifetime ----------------------------------------------------------------------------------

TEST(PackByLifetime, BuffersAliveTogetherNeverOverlap) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<Lifetime> buffers;
    for (int k = 0; k < 40; ++k) {
      const int a = static_cast<int>(rng() % 30), b = static_cast<int>(rng() % 30);
      buffers.push_back({1 + rng() % 1000, {{std::min(a, b), std::max(a, b)}}});
      if (k % 3 == 0) buffers.back().spans.push_back({40 + a, 40 + a});  // a second span, as a per-call buffer has
    }
    size_t total = 0;
    const std::vector<size_t> offsets = PackByLifetime(buffers, &total);
    size_t sum = 0;
    for (size_t i = 0; i < buffers.size(); ++i) {
      sum += AlignedBytes(buffers[i].floats) / sizeof(float);
      EXPECT_EQ(offsets[i] * sizeof(float) % 64, 0u);
      EXPECT_LE(offsets[i] + buffers[i].floats, total);
      for (size_t j = 0; j < i; ++j) {
        bool together = false;
        for (const auto& [fi, li] : buffers[i].spans)
          for (const auto& [fj, lj] : buffers[j].spans) together = together || (fi <= lj && fj <= li);
        const bool apart = offsets[i] + buffers[i].floats <= offsets[j] || offsets[j] + buffers[j].floats <= offsets[i];
        EXPECT_TRUE(!together || apart) << "trial " << trial << ": buffers " << i << " and " << j;
      }
    }
    EXPECT_LT(total, sum);  // forty random lifetimes in thirty steps: some share
  }
}

TEST(PackByLifetime, HandCheckedChain) {
  // a [0,1] and c [2,3] never meet and share; b [1,2] meets both. 16 floats = 64 bytes.
  size_t total = 0;
  const std::vector<size_t> offsets =
      PackByLifetime({{32, {{0, 1}}}, {16, {{1, 2}}}, {30, {{2, 3}}}, {100, {}}}, &total);
  EXPECT_EQ(offsets[0], 0u);
  EXPECT_EQ(offsets[2], 0u);   // where a was
  EXPECT_EQ(offsets[1], 32u);  // after a and c
  EXPECT_EQ(offsets[3], 0u);   // never used: anywhere
  EXPECT_EQ(total, 112u);      // the unused buffer still needs its floats (100, aligned to 16)
  // A per-call buffer used at steps 0 and 9 shares with one used from 1 to 8, not with one at 9.
  const std::vector<size_t> calls = PackByLifetime({{16, {{0, 0}, {9, 9}}}, {16, {{1, 8}}}, {16, {{9, 9}}}}, &total);
  EXPECT_EQ(calls[1], calls[0]);
  EXPECT_NE(calls[2], calls[0]);
  EXPECT_EQ(total, 32u);
}

// ---- in-place chains ---------------------------------------------------------------------------------

// A neuron layer whose backward reads its input or its output, then a second layer in place on the
// same blob, trained with and without in-place tops.
struct Chain {
  std::string first;   // type and parameters of the first layer
  std::string second;  // of the second
};

std::string ChainNet(const Chain& chain, bool in_place) {
  const std::string h1 = in_place ? "h" : "h1", h2 = in_place ? "h" : "h2";
  return std::string(R"(
name: "chain"
layer { name: "data" type: "DummyData" top: "data" top: "label"
        dummy_data_param { data_filler { type: "gaussian" std: 1 } data_filler { type: "gaussian" std: 1 }
                           shape { dim: 8 dim: 6 } shape { dim: 8 dim: 4 } } }
layer { name: "ip1" type: "InnerProduct" bottom: "data" top: "h"
        inner_product_param { num_output: 5 weight_filler { type: "gaussian" std: 0.5 } bias_filler { type: "constant" value: 0.1 } } }
)") + "layer { name: 'first' bottom: 'h' top: '" + h1 + "' " + chain.first + " }\n" +
         "layer { name: 'second' bottom: '" + h1 + "' top: '" + h2 + "' " + chain.second + " }\n" +
         "layer { name: 'ip2' type: 'InnerProduct' bottom: '" + h2 + "' top: 'out' " +
         "inner_product_param { num_output: 4 weight_filler { type: 'gaussian' std: 0.5 } } }\n" +
         "layer { name: 'loss' type: 'EuclideanLoss' bottom: 'out' bottom: 'label' top: 'loss' }\n";
}

std::string TrainedBytes(const NetParameter& net, int iterations, std::vector<std::string>* blob_names = nullptr) {
  SolverParameter param;
  *param.mutable_train_net_param() = net;
  param.set_base_lr(0.01f);
  param.set_momentum(0.9f);
  param.set_lr_policy("fixed");
  param.set_max_iter(iterations);
  param.set_random_seed(5);
  param.set_display(0);
  param.set_solver_mode(SolverParameter::CPU);
  Solver solver(param);
  solver.Step(iterations);
  if (blob_names) *blob_names = solver.net()->blob_names();
  Net& trained = *solver.net();  // the weights' bytes (the prototxts differ in their top names)
  return std::string(reinterpret_cast<const char*>(trained.param_data()), trained.param_count() * sizeof(float));
}

class InPlaceChain : public ::testing::TestWithParam<Chain> {};

TEST_P(InPlaceChain, TrainsByteForByteLikeTheNetWrittenOutOfPlace) {
  const std::string out_of_place = TrainedBytes(ParseNet(ChainNet(GetParam(), false)), 12);
  std::vector<std::string> names;
  const std::string in_place = TrainedBytes(ParseNet(ChainNet(GetParam(), true)), 12, &names);
  EXPECT_TRUE(in_place == out_of_place) << "in-place training diverged from the out-of-place net";
  EXPECT_NE(TrainedBytes(ParseNet(ChainNet(GetParam(), false)), 0), out_of_place) << "nothing was trained";
}

// Every neuron whose backward reads its input or output, followed by Dropout, Scale or another neuron.
std::vector<Chain> Chains() {
  const std::vector<std::string> firsts = {
      "type: 'TanH'", "type: 'Sigmoid'", "type: 'ELU' elu_param { alpha: 0.5 }", "type: 'Exp' exp_param { scale: 0.3 }",
      "type: 'Power' power_param { power: 2 shift: 1 scale: 0.5 }", "type: 'Log' log_param { shift: 20 }",
      "type: 'BNLL'", "type: 'Swish'", "type: 'ReLU' relu_param { negative_slope: 0.1 }",
      "type: 'Clip' clip_param { min: -0.4 max: 0.4 }", "type: 'PReLU'"};
  const std::vector<std::string> seconds = {
      "type: 'Dropout' dropout_param { dropout_ratio: 0.3 }",
      "type: 'Scale' scale_param { bias_term: true filler { type: 'constant' value: 0.7 } }", "type: 'TanH'",
      "type: 'Power' power_param { power: 2 scale: 0.3 }"};
  std::vector<Chain> chains;
  for (const auto& f : firsts)
    for (const auto& s : seconds) chains.push_back({f, s});
  return chains;
}

std::string ChainName(const ::testing::TestParamInfo<Chain>& info) {
  auto type = [](const std::string& text) {
    const size_t a = text.find('\'') + 1;
    return text.substr(a, text.find('\'', a) - a);
  };
  return type(info.param.first) + "_then_" + type(info.param.second) + "_" + std::to_string(info.index);
}

INSTANTIATE_TEST_SUITE_P(NeuronThenInPlaceLayer, InPlaceChain, ::testing::ValuesIn(Chains()), ChainName);

TEST(InPlaceChain, ALayerThatWouldDestroyAnEarlierBackwardsInputRunsOutOfPlace) {
  std::vector<std::string> names;
  TrainedBytes(ParseNet(ChainNet({"type: 'TanH'", "type: 'Dropout'"}, true)), 1, &names);
  EXPECT_NE(std::find(names.begin(), names.end(), "h (before second)"), names.end())
      << "TanH's output should keep its own memory";
  // In place, Scale's backward reads its saved input, not the top: TanH may overwrite the top.
  TrainedBytes(ParseNet(ChainNet({"type: 'Scale' scale_param { bias_term: true }", "type: 'TanH'"}, true)), 1, &names);
  EXPECT_EQ(std::find(names.begin(), names.end(), "h (before second)"), names.end());
}

// ---- what a plan keeps -------------------------------------------------------------------------------

const char* kDeepNet = R"(
name: "deep"
layer { name: "data" type: "Input" top: "data" top: "label" input_param { shape { dim: 4 dim: 16 } shape { dim: 4 dim: 16 } } }
layer { name: "ip1" type: "InnerProduct" bottom: "data" top: "a" inner_product_param { num_output: 16 weight_filler { type: "gaussian" std: 0.3 } } }
layer { name: "t1" type: "TanH" bottom: "a" top: "b" }
layer { name: "ip2" type: "InnerProduct" bottom: "b" top: "c" inner_product_param { num_output: 16 weight_filler { type: "gaussian" std: 0.3 } } }
layer { name: "t2" type: "TanH" bottom: "c" top: "d" }
layer { name: "ip3" type: "InnerProduct" bottom: "d" top: "e" inner_product_param { num_output: 16 weight_filler { type: "gaussian" std: 0.3 } } }
layer { name: "t3" type: "Sigmoid" bottom: "e" top: "f" }
layer { name: "loss" type: "EuclideanLoss" bottom: "f" bottom: "label" top: "loss" }
)";

size_t PlannedBytes(NetParameter param, Phase phase, bool reuse) {
  param.mutable_state()->set_phase(phase);
  param.set_memory_reuse(reuse);
  Context ctx(Device::kCPU, 1);
  Net net(param, ctx, "deep.prototxt");
  MemoryPlan plan(Device::kCPU);
  net.RequestMemory(plan);
  return plan.bytes();
}

TEST(MemoryPlan, ReuseShrinksTheArenaAndTheSwitchTurnsItOff) {
  const NetParameter param = ParseNet(kDeepNet);
  // Without reuse: six 4×16 activations with diffs, the inputs with diffs, the loss (data, diff),
  // EuclideanLoss's difference buffer, three 16×16+16 parameter sets with gradients.
  const size_t without = PlannedBytes(param, TRAIN, false);
  const size_t with = PlannedBytes(param, TRAIN, true);
  EXPECT_LT(with, without);
  EXPECT_LT(PlannedBytes(param, TEST, true), PlannedBytes(param, TEST, false));
}

TEST(MemoryPlan, OutputsAndBlobsAskedForStayReadableAfterAPass) {
  NetParameter param = ParseNet(kDeepNet);
  param.mutable_state()->set_phase(TEST);
  // Reference: every blob kept.
  param.set_memory_reuse(false);
  Context ctx(Device::kCPU, 1);
  Net all(param, ctx, "deep.prototxt");
  all.AllocateOwnArena();
  FillTrainedLikeWeights(all, 3);
  std::mt19937 rng(4);
  FillGaussian(all.blob_by_name("data"), rng);
  FillGaussian(all.blob_by_name("label"), rng);
  all.Forward();

  param.set_memory_reuse(true);
  Net kept(param, ctx, "deep.prototxt");
  kept.KeepReadable({"b", "d"});
  kept.AllocateOwnArena();
  FillTrainedLikeWeights(kept, 3);
  for (const char* input : {"data", "label"}) kept.blob_by_name(input)->WriteData(all.blob_by_name(input)->ReadData());
  kept.Forward();
  for (const char* name : {"b", "d", "loss", "data", "label"})
    EXPECT_EQ(kept.blob_by_name(name)->ReadData(), all.blob_by_name(name)->ReadData()) << name;
  EXPECT_NE(kept.blob_by_name("b")->data(), kept.blob_by_name("d")->data());
  Net fresh(param, ctx, "deep.prototxt");
  EXPECT_NE(ErrorOf([&] { fresh.KeepReadable({"nonesuch"}); }).find("no blob named 'nonesuch'"), std::string::npos);
}

TEST(MemoryPlan, DivergenceIsTracedToTheLayerThatMadeItWithReuseOnAndOff) {
  // log of a negative number: the Log layer, late in the pass, makes the first NaN; its output may
  // live where an earlier blob did, so the search runs the pass again rather than scanning memory.
  NetParameter param = ParseNet(R"(
layer { name: "x" type: "DummyData" top: "x" top: "y"
        dummy_data_param { data_filler { type: "constant" value: 1 } shape { dim: 2 dim: 8 } shape { dim: 2 dim: 8 } } }
layer { name: "ip1" type: "InnerProduct" bottom: "x" top: "a" inner_product_param { num_output: 8 weight_filler { type: "constant" value: 1 } } }
layer { name: "neg" type: "Power" bottom: "a" top: "b" power_param { scale: -1 } }
layer { name: "ip2" type: "InnerProduct" bottom: "b" top: "c" inner_product_param { num_output: 8 weight_filler { type: "constant" value: 1 } } }
layer { name: "log" type: "Log" bottom: "c" top: "d" }
layer { name: "loss" type: "EuclideanLoss" bottom: "d" bottom: "y" top: "loss" }
)");
  param.mutable_state()->set_phase(TRAIN);
  for (const bool reuse : {true, false}) {
    param.set_memory_reuse(reuse);
    Context ctx(Device::kCPU, 1);
    Net net(param, ctx, "nan.prototxt");
    net.AllocateOwnArena();
    net.Forward();
    net.Backward();
    EXPECT_EQ(FindNonFinite(net, ctx), "layer 'log' (Log) produced a non-finite output 'd'") << "reuse " << reuse;
  }
}

TEST(MemoryPlan, SplitTopsAreViewsOfTheirBottomsData) {
  const NetParameter param = ParseNet(R"(
layer { name: "x" type: "Input" top: "x" top: "y" input_param { shape { dim: 2 dim: 3 } shape { dim: 2 dim: 3 } } }
layer { name: "t" type: "TanH" bottom: "x" top: "t" }
layer { name: "a" type: "Sigmoid" bottom: "t" top: "a" }
layer { name: "b" type: "AbsVal" bottom: "t" top: "b" }
layer { name: "sum" type: "Eltwise" bottom: "a" bottom: "b" top: "s" }
layer { name: "loss" type: "EuclideanLoss" bottom: "s" bottom: "y" top: "loss" }
)");
  Context ctx(Device::kCPU, 1);
  NetParameter train(param);
  train.mutable_state()->set_phase(TRAIN);
  train.set_force_backward(true);  // else no diff below the Split is ever used, and any place will do
  Net net(train, ctx, "split.prototxt");
  net.AllocateOwnArena();
  ASSERT_STREQ(net.layer_by_name("t_t_0_split")->type(), "Split");
  const Blob* t = net.blob_by_name("t");
  for (const char* top : {"t_t_0_split_0", "t_t_0_split_1"}) {
    EXPECT_EQ(net.blob_by_name(top)->data(), t->data()) << top;
    EXPECT_NE(net.blob_by_name(top)->diff(), t->diff()) << top;
  }
}

TEST(MemoryPlan, APlanOnlyGpuContextPlansAConvolutionNetWithoutAGpu) {
  NetParameter param = ParseNet(R"(
layer { name: "x" type: "Input" top: "x" input_param { shape { dim: 8 dim: 3 dim: 32 dim: 32 } } }
layer { name: "conv" type: "Convolution" bottom: "x" top: "c" convolution_param { num_output: 16 kernel_size: 3 } }
layer { name: "relu" type: "ReLU" bottom: "c" top: "c" }
layer { name: "pool" type: "Pooling" bottom: "c" top: "p" pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
)");
  param.mutable_state()->set_phase(TRAIN);
  param.set_force_backward(true);
  Context ctx(Device::kGPU, Context::PlanOnly{});
  GpuSettings settings;
  settings.cudnn_workspace_limit = size_t{64} << 20;
  ctx.SetGpuSettings(settings);
  Net net(param, ctx, "plan.prototxt");
  MemoryPlan plan(Device::kGPU);
  net.RequestMemory(plan);
  // At least the input (data and diff) and, with cuDNN, the workspace limit.
  EXPECT_GE(plan.bytes(), size_t{2} * 8 * 3 * 32 * 32 * sizeof(float));
  EXPECT_NE(plan.Summary().find("Memory plan (GPU)"), std::string::npos) << plan.Summary();
}

}  // namespace
}  // namespace cortado::test
