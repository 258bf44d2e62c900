// gpu_compare.cpp — ExpectGpuMatchesCpu: one layer on both devices, the same inputs, every output compared.
#include "gpu_compare.hpp"

#include <algorithm>
#include <cmath>
#include <random>

namespace cortado::test {

void ExpectNear(const std::vector<float>& gpu, const std::vector<float>& cpu, float tolerance,
                const std::string& what) {
  ASSERT_EQ(gpu.size(), cpu.size()) << what;
  int reported = 0;
  for (size_t i = 0; i < cpu.size() && reported < 5; ++i) {
    const float allowed = tolerance * std::max(1.0f, std::fabs(cpu[i]));
    if (!(std::fabs(gpu[i] - cpu[i]) <= allowed)) {
      ADD_FAILURE() << what << " element " << i << ": GPU " << gpu[i] << ", CPU " << cpu[i];
      ++reported;
    }
  }
}

void ExpectNearInNorm(const std::vector<float>& gpu, const std::vector<float>& cpu, float relative,
                      const std::string& what) {
  ASSERT_EQ(gpu.size(), cpu.size()) << what;
  double error = 0, norm = 0;
  for (size_t i = 0; i < cpu.size(); ++i) {
    error += (static_cast<double>(gpu[i]) - cpu[i]) * (static_cast<double>(gpu[i]) - cpu[i]);
    norm += static_cast<double>(cpu[i]) * cpu[i];
  }
  EXPECT_LE(std::sqrt(error), relative * std::sqrt(norm) + 1e-30) << what << ": ‖GPU − CPU‖ " << std::sqrt(error)
                                                                    << ", ‖CPU‖ " << std::sqrt(norm);
}

void ExpectGpuClose(const Context& gpu_ctx, const std::vector<float>& gpu, const std::vector<float>& cpu,
                    float fp32_tolerance, const std::string& what, float tf32_relative) {
  if (gpu_ctx.tf32()) {
    ExpectNearInNorm(gpu, cpu, tf32_relative, what + " (TF32)");
  } else {
    ExpectNear(gpu, cpu, fp32_tolerance, what);
  }
}

void ExpectGpuMatchesCpu(const std::string& layer_text, const std::vector<std::vector<int>>& bottom_shapes,
                         int num_tops, const GpuCompareOptions& options) {
  LayerFixture cpu(layer_text, bottom_shapes, num_tops, options.seed, Device::kCPU);
  GpuSettings settings = StrictFp32();
  settings.strict_fp32 = !options.tf32;
  LayerFixture gpu(layer_text, bottom_shapes, num_tops, options.seed, Device::kGPU, settings);
  const auto compare = [&](const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
    ExpectGpuClose(gpu.ctx(), got, want, options.tolerance, what);
  };
  ASSERT_EQ(gpu.layer().blobs().size(), cpu.layer().blobs().size());
  for (size_t p = 0; p < cpu.layer().blobs().size(); ++p)
    gpu.layer().blobs()[p]->WriteData(cpu.layer().blobs()[p]->ReadData());

  std::mt19937 rng(options.seed + 1);
  for (size_t b = 0; b < bottom_shapes.size(); ++b) {
    std::vector<float> values(static_cast<size_t>(cpu.bottom(static_cast<int>(b)).count()));
    int classes = 0;
    for (const auto& [index, count] : options.label_bottoms)
      if (index == static_cast<int>(b)) classes = count;
    if (classes > 0) {
      std::uniform_int_distribution<int> label(0, classes - 1);
      for (float& v : values) v = static_cast<float>(label(rng));
    } else {
      std::normal_distribution<float> normal(0.0f, options.input_std);
      for (float& v : values) v = normal(rng);
    }
    cpu.bottom(static_cast<int>(b)).WriteData(values);
    gpu.bottom(static_cast<int>(b)).WriteData(values);
  }

  const float cpu_loss = cpu.Forward();
  const float gpu_loss = gpu.Forward();
  compare({gpu_loss}, {cpu_loss}, "loss");
  for (int t = 0; t < num_tops; ++t) compare(gpu.top(t).ReadData(), cpu.top(t).ReadData(), "top " + std::to_string(t));
  if (!options.check_backward) return;

  for (int t = 0; t < num_tops; ++t) {
    if (cpu.layer().loss(t) != 0) continue;  // loss tops keep their weight as the gradient
    std::vector<float> diff(static_cast<size_t>(cpu.top(t).count()));
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (float& v : diff) v = normal(rng);
    cpu.top(t).WriteDiff(diff);
    gpu.top(t).WriteDiff(diff);
  }
  cpu.Backward();
  gpu.Backward();
  for (size_t b = 0; b < bottom_shapes.size(); ++b) {
    bool is_label = false;
    for (const auto& entry : options.label_bottoms) is_label |= entry.first == static_cast<int>(b);
    if (is_label || !cpu.bottom(static_cast<int>(b)).has_diff()) continue;
    compare(gpu.bottom(static_cast<int>(b)).ReadDiff(), cpu.bottom(static_cast<int>(b)).ReadDiff(),
            "bottom diff " + std::to_string(b));
  }
  for (size_t p = 0; p < cpu.layer().blobs().size(); ++p)
    compare(gpu.layer().blobs()[p]->ReadDiff(), cpu.layer().blobs()[p]->ReadDiff(),
            "parameter diff " + std::to_string(p));
}

}  // namespace cortado::test
