// memory_data_gpu_test.cpp — MemoryData on a GPU net against a CPU net fed the same arrays: the
// uploaded batches (exact copies, in order, wrapping around), the labels, the scores and the loss of the
// layers after it, through a smaller batch size and back; a bad label is found on the host and named
// by the loss. The layer claims GPU support exactly when built with CUDA.
#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cortado/layer_registry.hpp"
#include "cortado/memory_data.hpp"
#include "cortado/net.hpp"
#include "gpu_compare.hpp"

namespace cortado::test {

namespace {

const char* kNet = R"(
name: "memory"
layer { name: "m" type: "MemoryData" top: "data" top: "label"
        memory_data_param { batch_size: 3 channels: 2 height: 2 width: 2 } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
        inner_product_param { num_output: 4 weight_filler { type: "gaussian" std: 0.3 }
                              bias_filler { type: "gaussian" std: 0.3 } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
)";

std::unique_ptr<Net> BuildNet(Context& ctx) {
  NetParameter param = ParseNet(kNet);
  param.mutable_state()->set_phase(TRAIN);
  auto net = std::make_unique<Net>(param, ctx, "memory.prototxt");
  net->KeepReadable({"data", "label", "ip"});
  net->AllocateOwnArena();
  return net;
}

MemoryDataLayer& MemoryData(Net& net) { return dynamic_cast<MemoryDataLayer&>(*net.layer_by_name("m")); }

}  // namespace

TEST(MemoryDataGpu, LayerClaimsGpuSupportExactlyWhenBuiltWithCuda) {
  Context ctx(Device::kCPU, 1);
  auto layer = LayerRegistry::Create(ParseLayer("name: 'x' type: 'MemoryData'"), ctx);
  EXPECT_EQ(layer->HasGpuImplementation(), BuiltWithCuda());
  EXPECT_FALSE(layer->IsCapturable());
}

TEST(MemoryDataGpu, BatchesLossAndBatchSizeChangesMatchTheCpu) {
  SKIP_WITHOUT_GPU();
  // 6 items of 8 values, labels in [0, 4): batches of 3 wrap after two forwards.
  std::vector<float> data(6 * 8), labels = {3, 0, 2, 1, 1, 0};
  std::mt19937 rng(7);
  std::normal_distribution<float> gauss;
  for (float& v : data) v = gauss(rng);

  Context cpu_ctx(Device::kCPU, 3), gpu_ctx(Device::kGPU, 3);
  gpu_ctx.SetGpuSettings(StrictFp32());
  std::unique_ptr<Net> cpu = BuildNet(cpu_ctx), gpu = BuildNet(gpu_ctx);
  const auto& cpu_ip = cpu->layer_by_name("ip")->blobs();
  const auto& gpu_ip = gpu->layer_by_name("ip")->blobs();
  for (size_t i = 0; i < cpu_ip.size(); ++i) gpu_ip[i]->WriteData(cpu_ip[i]->ReadData());
  MemoryData(*cpu).Reset(data.data(), labels.data(), 6);
  MemoryData(*gpu).Reset(data.data(), labels.data(), 6);

  // Batch sizes per forward: 3, 3, 3 (wrapped), then 2, 2, 2, 2 (from the first item), then 3 again.
  const std::vector<int> batches = {3, 3, 3, 2, 2, 2, 2, 3};
  for (size_t k = 0; k < batches.size(); ++k) {
    if (k > 0 && batches[k] != batches[k - 1]) {
      MemoryData(*cpu).set_batch_size(batches[k]);
      MemoryData(*gpu).set_batch_size(batches[k]);
    }
    const std::string step = "forward " + std::to_string(k);
    const float cpu_loss = cpu->Forward(), gpu_loss = gpu->Forward();
    EXPECT_NEAR(gpu_loss, cpu_loss, 1e-5f * std::max(1.0f, std::abs(cpu_loss))) << step;
    for (const char* blob : {"data", "label", "ip"}) {
      EXPECT_EQ(gpu->blob_by_name(blob)->shape(), cpu->blob_by_name(blob)->shape()) << step << " " << blob;
      ExpectNear(gpu->blob_by_name(blob)->ReadData(), cpu->blob_by_name(blob)->ReadData(), 1e-5f,
                 step + " " + blob);
    }
    EXPECT_EQ(gpu->blob_by_name("data")->shape(0), batches[k]) << step;
  }
  // Exact copies of the arrays.
  MemoryData(*gpu).Reset(data.data(), labels.data(), 6);
  gpu->Forward();
  const std::vector<float> first = gpu->blob_by_name("data")->ReadData();
  ASSERT_EQ(first.size(), 24u);
  for (size_t i = 0; i < first.size(); ++i) EXPECT_EQ(first[i], data[i]) << i;
  EXPECT_EQ(gpu->blob_by_name("label")->ReadData(), (std::vector<float>{3, 0, 2}));
}

TEST(MemoryDataGpu, BadLabelIsFoundOnTheHostAndNamedByTheLoss) {
  SKIP_WITHOUT_GPU();
  Context ctx(Device::kGPU, 3);
  std::unique_ptr<Net> gpu = BuildNet(ctx);
  std::vector<float> data(3 * 8, 1.0f), labels = {0, 9, 1};
  MemoryData(*gpu).Reset(data.data(), labels.data(), 3);
  const std::string error = ErrorOf([&] { gpu->Forward(); });
  EXPECT_NE(error.find("layer loss (SoftmaxWithLoss)"), std::string::npos) << error;
  EXPECT_EQ(MemoryData(*gpu).position(), 0);  // the batch was not served
  labels[1] = 2;
  EXPECT_TRUE(std::isfinite(gpu->Forward()));
}

}  // namespace cortado::test
