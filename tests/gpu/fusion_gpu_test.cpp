// fusion_gpu_test.cpp — the fused chains (src/layers/fusion.hpp) on the GPU against the CPU: a net with
// every form the rules fuse (BatchNorm → Scale → ReLU in place, BatchNorm → Scale into a sum,
// Eltwise SUM → ReLU, BatchNorm → Sigmoid out of place, BatchNorm with scale_bias → ReLU in place) trains three passes on both devices from the same
// weights and inputs, and gives the same losses, running statistics and gradients; its TEST phase (global
// statistics, one pass from x to y) gives the same outputs. Strict FP32, so the devices differ only in
// the order of their sums.
#include <algorithm>
#include <cmath>
#include <random>

#include "cortado/net.hpp"
#include "gpu/gpu_compare.hpp"

namespace cortado::test {
namespace {

const char* const kNet = R"(
layer { name: "in" type: "Input" top: "data" top: "label"
        input_param { shape { dim: 6 dim: 3 dim: 10 dim: 10 } shape { dim: 6 } } }
layer { name: "conv" type: "Convolution" bottom: "data" top: "conv"
        convolution_param { num_output: 16 kernel_size: 3 pad: 1 bias_term: false weight_filler { type: "msra" } } }
layer { name: "bn" type: "BatchNorm" bottom: "conv" top: "conv" }
layer { name: "scale" type: "Scale" bottom: "conv" top: "conv" scale_param { bias_term: true } }
layer { name: "relu" type: "ReLU" bottom: "conv" top: "conv" }
layer { name: "branch" type: "Convolution" bottom: "conv" top: "branch"
        convolution_param { num_output: 16 kernel_size: 1 bias_term: false weight_filler { type: "msra" } } }
layer { name: "bn_branch" type: "BatchNorm" bottom: "branch" top: "branch" }
layer { name: "scale_branch" type: "Scale" bottom: "branch" top: "branch" scale_param { bias_term: true } }
layer { name: "sum" type: "Eltwise" bottom: "conv" bottom: "branch" top: "sum" }
layer { name: "sum_relu" type: "ReLU" bottom: "sum" top: "sum" }
layer { name: "bn_sig" type: "BatchNorm" bottom: "sum" top: "bn_sig" }
layer { name: "sigmoid" type: "Sigmoid" bottom: "bn_sig" top: "sigmoid" }
layer { name: "bn_own" type: "BatchNorm" bottom: "sigmoid" top: "bn_own" batch_norm_param { scale_bias: true } }
layer { name: "relu_own" type: "ReLU" bottom: "bn_own" top: "bn_own" }
layer { name: "ip" type: "InnerProduct" bottom: "bn_own" top: "ip"
        inner_product_param { num_output: 5 weight_filler { type: "xavier" } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
)";

int CountChains(const Net& net) {
  int chains = 0;
  for (int i = 0; i < static_cast<int>(net.layers().size()); ++i)
    chains += net.fused_layer_at(i) != nullptr && (i == 0 || net.fused_layer_at(i - 1) != net.fused_layer_at(i));
  return chains;
}

TEST(FusionGpu, ChainsTrainAndTestAsOnTheCpu) {
  SKIP_WITHOUT_GPU();
  for (Phase phase : {TRAIN, TEST}) {
    SCOPED_TRACE(phase == TRAIN ? "TRAIN" : "TEST");
    NetParameter param = ParseNet(kNet);
    param.mutable_state()->set_phase(phase);
    Context cpu_ctx(Device::kCPU, 9), gpu_ctx(Device::kGPU, 9);
    gpu_ctx.SetGpuSettings(StrictFp32());
    Net cpu(param, cpu_ctx, "cpu.prototxt"), gpu(param, gpu_ctx, "gpu.prototxt");
    for (Net* net : {&cpu, &gpu}) {
      net->KeepReadable({"sigmoid"});  // the last chain's output, compared after the pass
      net->AllocateOwnArena();
    }
    FillTrainedLikeWeights(cpu, 3);
    NetParameter weights;
    cpu.ToProto(&weights);
    gpu.CopyTrainedLayersFrom(weights);
    EXPECT_EQ(CountChains(gpu), 5);  // bn+scale+relu, bn_branch+scale_branch, sum+sum_relu, bn_sig+sigmoid, bn_own+relu_own
    std::mt19937 rng(5);
    FillGaussian(cpu.blob_by_name("data"), rng, 0.2f, 1.5f);
    gpu.blob_by_name("data")->WriteData(cpu.blob_by_name("data")->ReadData());
    for (Net* net : {&cpu, &gpu}) net->blob_by_name("label")->WriteData({0, 1, 2, 3, 4, 0});
    for (int pass = 0; pass < (phase == TRAIN ? 3 : 1); ++pass) {
      const std::string when = "pass " + std::to_string(pass);
      float losses[2];
      int k = 0;
      for (Net* net : {&cpu, &gpu}) {
        losses[k++] = net->Forward();
        if (phase != TRAIN) continue;
        net->ClearParamDiffs();
        net->Backward();
      }
      gpu_ctx.Synchronize();
      EXPECT_NEAR(losses[1], losses[0], 1e-4f * std::max(1.0f, std::fabs(losses[0]))) << when;
      ExpectNear(gpu.blob_by_name("sigmoid")->ReadData(), cpu.blob_by_name("sigmoid")->ReadData(), 1e-4f,
                 "the last chain's output, " + when);
      for (size_t p = 0; p < cpu.params().size(); ++p)
        ExpectNear(gpu.params()[p]->ReadData(), cpu.params()[p]->ReadData(), 1e-4f,
                   "parameter " + std::to_string(p) + ", " + when);
      if (phase != TRAIN) continue;
      for (size_t p = 0; p < cpu.learnable_params().size(); ++p)
        ExpectNear(gpu.learnable_params()[p]->ReadDiff(), cpu.learnable_params()[p]->ReadDiff(), 1e-3f,
                   "gradient " + std::to_string(p) + ", " + when);
    }
  }
}

}  // namespace
}  // namespace cortado::test
