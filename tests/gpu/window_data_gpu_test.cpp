// window_data_gpu_test.cpp — WindowData on a GPU net against a CPU net with the same random_seed: the
// same windows, flips, context padding, mean and scale, batch after batch, uploaded exactly, with the
// same labels. The images are PPM files written here (no OpenCV in the test); without image support
// the layer cannot run, and the test says so.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "cortado/image.hpp"  // BuiltWithImageSupport
#include "cortado/layer_registry.hpp"
#include "cortado/net.hpp"
#include "gpu_compare.hpp"

namespace cortado::test {

namespace {

constexpr int kForwards = 6;

// A binary PPM of height×width, pixel (y, x) of channel c (BGR) = (37c + 11y + 5x + shift) % 256.
void WritePpm(const std::string& path, int height, int width, int shift) {
  std::string bytes = "P6\n" + std::to_string(width) + " " + std::to_string(height) + "\n255\n";
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      for (int c = 2; c >= 0; --c) bytes += static_cast<char>((37 * c + 11 * y + 5 * x + shift) % 256);
  WriteFile(path, bytes);
}

// Two images, windows of both kinds in each, some of them at the border; mirror and context_pad on.
std::string WindowLayer(const std::string& dir) {
  WritePpm(dir + "/a.ppm", 12, 16, 0);
  WritePpm(dir + "/b.ppm", 10, 9, 101);
  WriteFile(dir + "/windows.txt",
            "# 0\na.ppm\n3\n12\n16\n4\n3 0.8 0 0 6 5\n1 0.6 8 3 15 11\n0 0.1 2 2 9 9\n0 0.3 10 0 15 4\n"
            "# 1\nb.ppm\n3\n10\n9\n3\n2 1 1 1 7 8\n0 0.2 0 5 4 9\n0 0 6 0 8 2\n");
  return "layer { name: 'w' type: 'WindowData' top: 'data' top: 'label' "
         "window_data_param { source: '" + dir + "/windows.txt' root_folder: '" + dir + "/' batch_size: 8 "
         "context_pad: 2 } transform_param { crop_size: 9 mirror: true mean_value: 90 mean_value: 110 "
         "mean_value: 130 scale: 0.25 } }";
}

struct Batches {
  std::vector<float> data, label;
};

Batches RunNet(const std::string& layer, Device device) {
  Context ctx(device, 29);  // the same random_seed on both
  NetParameter param = ParseNet("name: 'windows' " + layer);
  param.mutable_state()->set_phase(TRAIN);
  Net net(param, ctx, "windows.prototxt");
  net.KeepReadable({"data", "label"});
  net.AllocateOwnArena();
  Batches out;
  for (int k = 0; k < kForwards; ++k) {
    net.Forward();
    const std::vector<float> data = net.blob_by_name("data")->ReadData();
    const std::vector<float> label = net.blob_by_name("label")->ReadData();
    out.data.insert(out.data.end(), data.begin(), data.end());
    out.label.insert(out.label.end(), label.begin(), label.end());
  }
  return out;
}

}  // namespace

TEST(WindowDataGpu, LayerClaimsGpuSupportExactlyWhenBuiltWithCuda) {
  Context ctx(Device::kCPU, 1);
  auto layer = LayerRegistry::Create(ParseLayer("name: 'w' type: 'WindowData'"), ctx);
  EXPECT_EQ(layer->HasGpuImplementation(), BuiltWithCuda());
}

TEST(WindowDataGpu, GpuNetGivesTheCpusBatchesForTheSameSeed) {
  SKIP_WITHOUT_GPU();
  if (!BuiltWithImageSupport()) GTEST_SKIP() << "this build has no OpenCV: WindowData cannot read its images";
  const std::string layer = WindowLayer(TempDir());
  const Batches cpu = RunNet(layer, Device::kCPU), gpu = RunNet(layer, Device::kGPU);
  ASSERT_EQ(cpu.data.size(), size_t{kForwards} * 8 * 3 * 9 * 9);
  const size_t per_batch = cpu.data.size() / kForwards;
  for (int k = 0; k < kForwards; ++k) {
    const auto begin = static_cast<std::ptrdiff_t>(k * per_batch), end = begin + static_cast<std::ptrdiff_t>(per_batch);
    EXPECT_EQ(std::vector<float>(gpu.data.begin() + begin, gpu.data.begin() + end),
              std::vector<float>(cpu.data.begin() + begin, cpu.data.begin() + end))
        << "data of forward " << k;
  }
  EXPECT_EQ(gpu.label, cpu.label);
  // Six background windows, then two foreground ones, in every batch.
  for (int k = 0; k < kForwards; ++k)
    for (int b = 0; b < 8; ++b) EXPECT_EQ(cpu.label[k * 8 + b] > 0, b >= 6) << "forward " << k << " item " << b;
  EXPECT_NE(std::vector<float>(cpu.data.begin(), cpu.data.begin() + per_batch),
            std::vector<float>(cpu.data.begin() + per_batch, cpu.data.begin() + 2 * per_batch))
      << "each forward draws new windows";
}

}  // namespace cortado::test
