// math_gpu_test.cpp — math_gpu.hpp against math.hpp: BLAS (row-major gemm/gemv in every transpose
// combination), the element-wise functions and the reductions, on random data.
#include <random>

#include "cortado/math.hpp"
#include "cortado/math_gpu.hpp"
#include "cortado/memory.hpp"
#include "gpu_compare.hpp"

namespace cortado::test {

namespace {

std::vector<float> Random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

// Device blobs holding the given values.
struct DeviceArrays {
  DeviceArrays(Context& ctx, const std::vector<std::vector<float>>& values) {
    for (const auto& v : values) blobs.push_back(std::make_unique<Blob>(std::vector<int>{static_cast<int>(v.size())}));
    std::vector<Blob*> raw;
    for (auto& b : blobs) raw.push_back(b.get());
    arena = AllocateBlobs(raw, false, Device::kGPU);
    for (size_t i = 0; i < values.size(); ++i) blobs[i]->WriteData(values[i]);
  }
  float* operator[](size_t i) { return blobs[i]->data(); }
  std::vector<float> Read(size_t i) { return blobs[i]->ReadData(); }
  std::vector<std::unique_ptr<Blob>> blobs;
  std::unique_ptr<Arena> arena;
};

}  // namespace

TEST(MathGpu, GemmAndGemvMatchTheCpuInEveryTransposeCombination) {
  SKIP_WITHOUT_GPU();
  Context ctx(Device::kGPU, 1);
  GpuSettings strict;  // FP32 products, as the CPU's (TF32, the default on an H100, rounds to 10 bits)
  strict.strict_fp32 = true;
  ctx.SetGpuSettings(strict);
  const int m = 7, n = 5, k = 9;
  for (Trans ta : {Trans::kNo, Trans::kYes})
    for (Trans tb : {Trans::kNo, Trans::kYes}) {
      std::vector<float> a = Random(m * k, 1), b = Random(k * n, 2), c = Random(m * n, 3);
      DeviceArrays d(ctx, {a, b, c});
      gpu_gemm(ctx, ta, tb, m, n, k, 0.7f, d[0], d[1], 0.3f, d[2]);
      cpu_gemm(ta, tb, m, n, k, 0.7f, a.data(), b.data(), 0.3f, c.data());
      ExpectNear(d.Read(2), c, 1e-5f, "gemm");
    }
  for (Trans ta : {Trans::kNo, Trans::kYes}) {
    std::vector<float> a = Random(m * n, 4), x = Random(ta == Trans::kNo ? n : m, 5),
                       y = Random(ta == Trans::kNo ? m : n, 6);
    DeviceArrays d(ctx, {a, x, y});
    gpu_gemv(ctx, ta, m, n, 1.5f, d[0], d[1], -0.5f, d[2]);
    cpu_gemv(ta, m, n, 1.5f, a.data(), x.data(), -0.5f, y.data());
    ExpectNear(d.Read(2), y, 1e-5f, "gemv");
  }
}

TEST(MathGpu, ElementWiseAndReductionsMatchTheCpu) {
  SKIP_WITHOUT_GPU();
  Context ctx(Device::kGPU, 1);
  const size_t n = 1000;
  std::vector<float> a = Random(n, 7), b = Random(n, 8), y(n);
  for (float& v : b) v = v == 0 ? 1 : v;
  DeviceArrays d(ctx, {a, b, y});
  EXPECT_NEAR(gpu_dot(ctx, n, d[0], d[1]), cpu_dot(n, a.data(), b.data()), 1e-3f);
  EXPECT_NEAR(gpu_asum(ctx, n, d[0]), cpu_asum(n, a.data()), 1e-2f);
  EXPECT_NEAR(gpu_sumsq(ctx, n, d[0]), cpu_sumsq(n, a.data()), 1e-2f);
  gpu_div(ctx, n, d[0], d[1], d[2]);
  cpu_div(n, a.data(), b.data(), y.data());
  ExpectNear(d.Read(2), y, 1e-6f, "div");
  gpu_axpby(ctx, n, 2.0f, d[0], 0.5f, d[2]);
  cpu_axpby(n, 2.0f, a.data(), 0.5f, y.data());
  ExpectNear(d.Read(2), y, 1e-6f, "axpby");
  gpu_sign(ctx, n, d[0], d[2]);
  cpu_sign(n, a.data(), y.data());
  ExpectNear(d.Read(2), y, 0.0f, "sign");
  gpu_set(ctx, n, 3.0f, d[2]);
  EXPECT_EQ(d.Read(2), std::vector<float>(n, 3.0f));
  EXPECT_TRUE(gpu_all_finite(ctx, n, d[0]));
  a[n / 2] = std::numeric_limits<float>::infinity();
  d.blobs[0]->WriteData(a);
  EXPECT_FALSE(gpu_all_finite(ctx, n, d[0]));
}

TEST(MathGpu, WithoutAGpuTheContextSaysSo) {
  if (GpuCount() > 0) GTEST_SKIP() << "this machine has a GPU";
  const std::string message = ErrorOf([] { Context ctx(Device::kGPU, 1); });
  EXPECT_TRUE(message.find("no GPU") != std::string::npos || message.find("no GPU support") != std::string::npos)
      << message;
}

}  // namespace cortado::test
