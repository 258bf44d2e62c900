// step_inputs_gpu_test.cpp — StepInputs (step_inputs.hpp): values set on the host before an Upload are
// what kernels queued after it read, step after step, through more uploads than the staging ring
// holds (each staging reused only after its copy), with nothing waited for in between; and
// gpu_dot_accumulate adds to a device float without waiting.
#include <cmath>
#include <cstring>

#include "cortado/math_gpu.hpp"
#include "cortado/memory.hpp"
#include "cortado/step_inputs.hpp"
#include "gpu_compare.hpp"

namespace cortado::test {

TEST(StepInputsGpu, KernelsAfterEachUploadReadThatStepsValues) {
  SKIP_WITHOUT_GPU();
  Context ctx(Device::kGPU, 1);
  StepInputs& inputs = StepInputsOf(ctx);
  const int rate = inputs.Reserve(), seed = inputs.Reserve();
  constexpr int kSteps = 3 * StepInputs::kRing + 5;
  Blob rates(std::vector<int>{kSteps}), seeds(std::vector<int>{2 * kSteps});
  auto arena = AllocateBlobs({&rates, &seeds}, false, Device::kGPU);
  for (int step = 0; step < kSteps; ++step) {
    inputs.SetFloat(rate, 0.5f * step + 0.25f);
    inputs.SetWord(seed, (uint64_t{0x9E3779B9} << 32) | static_cast<uint64_t>(step));
    inputs.Upload(ctx);
    // What a step's kernels see: the float, and the word's two halves copied as raw 32-bit values.
    gpu_copy(ctx, 1, inputs.device_float(rate), rates.data() + step);
    gpu_copy(ctx, 2, reinterpret_cast<const float*>(inputs.device_word(seed)), seeds.data() + 2 * step);
  }
  ctx.Synchronize();
  const std::vector<float> got_rates = rates.ReadData(), got_seeds = seeds.ReadData();
  for (int step = 0; step < kSteps; ++step) {
    EXPECT_EQ(got_rates[step], 0.5f * step + 0.25f) << "step " << step;
    uint32_t low = 0, high = 0;
    std::memcpy(&low, &got_seeds[2 * step], sizeof low);
    std::memcpy(&high, &got_seeds[2 * step + 1], sizeof high);
    EXPECT_EQ(low, static_cast<uint32_t>(step)) << "step " << step;
    EXPECT_EQ(high, 0x9E3779B9u) << "step " << step;
  }
}

TEST(StepInputsGpu, DotAccumulateAddsOnTheDevice) {
  SKIP_WITHOUT_GPU();
  Context ctx(Device::kGPU, 1);
  Blob x(std::vector<int>{1000}), y(std::vector<int>{1000}), sum(std::vector<int>{1});
  auto arena = AllocateBlobs({&x, &y, &sum}, false, Device::kGPU);
  std::vector<float> xs(1000), ys(1000);
  double want = 3.0;
  for (int i = 0; i < 1000; ++i) {
    xs[i] = 0.001f * i;
    ys[i] = 1.0f - 0.002f * i;
    want += 2.0 * static_cast<double>(xs[i]) * ys[i];
  }
  x.WriteData(xs);
  y.WriteData(ys);
  sum.WriteData({3.0f});
  gpu_dot_accumulate(ctx, 1000, x.data(), y.data(), sum.data());
  gpu_dot_accumulate(ctx, 1000, x.data(), y.data(), sum.data());
  ctx.Synchronize();
  EXPECT_NEAR(sum.ReadData()[0], want, 1e-4 * std::fabs(want));
}

}  // namespace cortado::test
