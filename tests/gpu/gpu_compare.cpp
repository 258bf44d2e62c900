// gpu_compare.cpp — ExpectGpuMatchesCpu: one layer on both devices, the same inputs, every output compared;
// RunForComparison: one device's run of it.
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

namespace {

// The number of classes of bottom b's labels; 0 for a Gaussian bottom.
int LabelClasses(const GpuCompareOptions& options, int b) {
  int classes = 0;
  for (const auto& [index, count] : options.label_bottoms)
    if (index == b) classes = count;
  return classes;
}

bool IsLabelBottom(const GpuCompareOptions& options, int b) {
  for (const auto& entry : options.label_bottoms)
    if (entry.first == b) return true;
  return false;
}

}  // namespace

ComparedRun RunForComparison(LayerFixture& fixture, const GpuCompareOptions& options) {
  const int num_bottoms = static_cast<int>(fixture.bottom().size());
  const int num_tops = static_cast<int>(fixture.top().size());
  std::mt19937 rng(options.seed + 1);
  for (int b = 0; b < num_bottoms; ++b) {
    std::vector<float> values(static_cast<size_t>(fixture.bottom(b).count()));
    const int classes = LabelClasses(options, b);
    if (classes > 0) {
      std::uniform_int_distribution<int> label(0, classes - 1);
      for (float& v : values) v = static_cast<float>(label(rng));
    } else {
      std::normal_distribution<float> normal(0.0f, options.input_std);
      for (float& v : values) v = normal(rng);
    }
    fixture.bottom(b).WriteData(values);
  }

  ComparedRun run;
  run.loss = fixture.Forward();
  for (int t = 0; t < num_tops; ++t) run.tops.push_back(fixture.top(t).ReadData());
  if (!options.check_backward) return run;

  for (int t = 0; t < num_tops; ++t) {
    if (fixture.layer().loss(t) != 0) continue;  // loss tops keep their weight as the gradient
    std::vector<float> diff(static_cast<size_t>(fixture.top(t).count()));
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (float& v : diff) v = normal(rng);
    fixture.top(t).WriteDiff(diff);
  }
  fixture.Backward();
  for (int b = 0; b < num_bottoms; ++b) {
    if (IsLabelBottom(options, b) || !fixture.bottom(b).has_diff()) {
      run.bottom_diffs.emplace_back();
    } else {
      run.bottom_diffs.emplace_back(fixture.bottom(b).ReadDiff());
    }
  }
  for (const auto& p : fixture.layer().blobs()) run.param_diffs.push_back(p->ReadDiff());
  return run;
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

  // The same bottoms and top diffs on both (RunForComparison seeds its generator from the options).
  const ComparedRun want = RunForComparison(cpu, options);
  const ComparedRun got = RunForComparison(gpu, options);
  compare({got.loss}, {want.loss}, "loss");
  for (int t = 0; t < num_tops; ++t) compare(got.tops[t], want.tops[t], "top " + std::to_string(t));
  if (!options.check_backward) return;

  for (size_t b = 0; b < want.bottom_diffs.size(); ++b) {
    if (!want.bottom_diffs[b]) continue;
    if (!got.bottom_diffs[b]) {
      ADD_FAILURE() << "bottom " << b << " has a diff on the CPU but none on the GPU";
      continue;
    }
    compare(*got.bottom_diffs[b], *want.bottom_diffs[b], "bottom diff " + std::to_string(b));
  }
  for (size_t p = 0; p < want.param_diffs.size(); ++p)
    compare(got.param_diffs[p], want.param_diffs[p], "parameter diff " + std::to_string(p));
}

}  // namespace cortado::test
