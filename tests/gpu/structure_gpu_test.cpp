// structure_gpu_test.cpp — the layers that move, join or make blobs, on the GPU beyond the plain
// CPU-against-GPU comparisons of Split, Flatten, Reshape, Silence, Concat, Slice, Eltwise, Input and
// DummyData (rows of layer_table_gpu_test.cpp): Silence zeroes the bottom diffs, Eltwise MAX's ties
// go to the first bottom, DummyData fills constant tops once and random ones with the CPU's draws
// (every Forward, or once with refill: false) and names itself in an unknown filler's error.
#include <random>

#include "cortado/error.hpp"
#include "cortado/gpu.hpp"
#include "cortado/layer_registry.hpp"
#include "gpu_compare.hpp"

namespace cortado::test {

TEST(StructureGpu, SilenceZeroesTheBottomDiffs) {
  SKIP_WITHOUT_GPU();
  LayerFixture f("type: 'Silence'", {{2, 3}, {4}}, 0, 1701, Device::kGPU);
  f.bottom(0).WriteDiff(std::vector<float>(6, 5.0f));
  f.bottom(1).WriteDiff(std::vector<float>(4, -2.0f));
  f.Forward();
  f.Backward();
  f.ctx().Synchronize();
  EXPECT_EQ(f.bottom(0).ReadDiff(), std::vector<float>(6, 0.0f));
  EXPECT_EQ(f.bottom(1).ReadDiff(), std::vector<float>(4, 0.0f));
}

// Ties go to the first bottom holding the maximum, on both devices.
TEST(StructureGpu, EltwiseMaxTiesGoToTheFirstBottom) {
  SKIP_WITHOUT_GPU();
  const std::string text = "type: 'Eltwise' eltwise_param { operation: MAX }";
  const std::vector<std::vector<float>> x = {{1, 2, 3, 0, 5, -1}, {1, 2, 1, 4, 5, -1}, {0, 2, 3, 4, 5, -1}};
  const std::vector<float> dy = {10, 20, 30, 40, 50, 60};
  std::vector<std::vector<float>> dx[2];
  for (Device device : {Device::kCPU, Device::kGPU}) {
    LayerFixture f(text, {{6}, {6}, {6}}, 1, 1701, device);
    for (int k = 0; k < 3; ++k) f.bottom(k).WriteData(x[k]);
    f.Forward();
    f.top(0).WriteDiff(dy);
    f.Backward();
    f.ctx().Synchronize();
    EXPECT_EQ(f.top(0).ReadData(), (std::vector<float>{1, 2, 3, 4, 5, -1})) << DeviceName(device);
    for (int k = 0; k < 3; ++k) dx[device == Device::kGPU].push_back(f.bottom(k).ReadDiff());
  }
  EXPECT_EQ(dx[1], dx[0]);
  EXPECT_EQ(dx[1][0], (std::vector<float>{10, 20, 30, 0, 50, 60}));
  EXPECT_EQ(dx[1][1], (std::vector<float>{0, 0, 0, 40, 0, 0}));
  EXPECT_EQ(dx[1][2], (std::vector<float>(6, 0.0f)));
}

// A constant top is filled at the first Forward only (what is written there later stays); a random
// top gets the CPU's numbers in the CPU's order, drawn again every Forward (refill: true, the
// default) or once (refill: false); no pass allocates device memory. Only a layer that draws on every
// pass keeps CUDA graphs from capturing it.
TEST(StructureGpu, DummyDataFillsConstantsOnceAndDrawsTheCpusNumbers) {
  SKIP_WITHOUT_GPU();
  for (const std::string refill : {"true", "false"}) {
    SCOPED_TRACE("refill: " + refill);
    const std::string text = "type: 'DummyData' dummy_data_param { refill: " + refill + R"(
                                data_filler { type: 'constant' value: 2.5 }
                                data_filler { type: 'gaussian' }
                                shape { dim: 4 } shape { dim: 50 } })";
    LayerFixture cpu(text, {}, 2, 5, Device::kCPU);
    LayerFixture gpu(text, {}, 2, 5, Device::kGPU);
    EXPECT_EQ(gpu.layer().IsCapturable(), refill == "false");
    const int64_t allocations = GpuAllocationCount();
    std::vector<float> first;
    for (int pass = 0; pass < 3; ++pass) {
      cpu.Forward();
      gpu.Forward();
      gpu.ctx().Synchronize();
      EXPECT_EQ(gpu.top(0).ReadData(), std::vector<float>(4, pass == 0 ? 2.5f : 9.0f)) << "pass " << pass;
      gpu.top(0).WriteData(std::vector<float>(4, 9.0f));  // kept: nothing fills a constant top again
      const std::vector<float> values = gpu.top(1).ReadData();
      EXPECT_EQ(values, cpu.top(1).ReadData()) << "pass " << pass;
      if (pass == 0) {
        first = values;
      } else if (refill == "true") {
        EXPECT_NE(values, first) << "pass " << pass;
      } else {
        EXPECT_EQ(values, first) << "pass " << pass;
      }
    }
    EXPECT_EQ(GpuAllocationCount(), allocations);
  }
}

TEST(StructureGpu, DummyDataUnknownFillerNamesTheLayer) {
  SKIP_WITHOUT_GPU();
  LayerFixture f("name: 'dd' type: 'DummyData' dummy_data_param { data_filler { type: 'nope' } shape { dim: 2 } }",
                 {}, 1, 1701, Device::kGPU);
  const std::string message = ErrorOf([&] { f.Forward(); });
  EXPECT_NE(message.find("layer dd (DummyData)"), std::string::npos) << message;
  EXPECT_NE(message.find("nope"), std::string::npos) << message;
}

}  // namespace cortado::test
