// math_test.cpp — cpu_gemm and cpu_gemv against plain double loops, through OpenBLAS (CPU engine im2col)
// and through oneDNN (auto), for every transpose combination and sizes on both sides of the threading
// split; and what cpu_engine.hpp reports of the CPU.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "cortado/cpu_engine.hpp"
#include "cortado/math.hpp"

namespace cortado::test {
namespace {

std::vector<CpuEngine> Engines() {
  std::vector<CpuEngine> engines{CpuEngine::kIm2col};
  if (BuiltWithOneDnn()) engines.push_back(CpuEngine::kAuto);
  return engines;
}

std::vector<float> Random(size_t n, std::mt19937& rng) {
  std::normal_distribution<float> normal;
  std::vector<float> v(n);
  for (float& e : v) e = normal(rng);
  return v;
}

TEST(CpuMath, GemmMatchesLoopsOnEveryEngine) {
  const CpuEngine saved = CpuEngineSetting();
  std::mt19937 rng(3);
  const int sizes[][3] = {{3, 5, 4}, {64, 100, 75}, {130, 257, 96}};  // the last is split over threads
  for (CpuEngine engine : Engines()) {
    SetCpuEngine(engine);
    for (const auto& size : sizes) {
      const int m = size[0], n = size[1], k = size[2];
      for (Trans ta : {Trans::kNo, Trans::kYes}) {
        for (Trans tb : {Trans::kNo, Trans::kYes}) {
          SCOPED_TRACE(std::string(CpuEngineName(engine)) + " " + std::to_string(m) + "x" + std::to_string(n) + "x" +
                       std::to_string(k) + (ta == Trans::kYes ? " A'" : "") + (tb == Trans::kYes ? " B'" : ""));
          const std::vector<float> a = Random(size_t(m) * k, rng), b = Random(size_t(k) * n, rng);
          std::vector<float> c = Random(size_t(m) * n, rng);
          const std::vector<float> c0 = c;
          cpu_gemm(ta, tb, m, n, k, 0.5f, a.data(), b.data(), 2.0f, c.data());
          for (int i = 0; i < m; ++i) {
            for (int j = 0; j < n; ++j) {
              double sum = 0;
              for (int p = 0; p < k; ++p)
                sum += double(ta == Trans::kNo ? a[size_t(i) * k + p] : a[size_t(p) * m + i]) *
                       (tb == Trans::kNo ? b[size_t(p) * n + j] : b[size_t(j) * k + p]);
              const double want = 0.5 * sum + 2.0 * c0[size_t(i) * n + j];
              ASSERT_NEAR(c[size_t(i) * n + j], want, 1e-4 * (1 + std::abs(want)) * std::sqrt(k)) << i << "," << j;
            }
          }
        }
      }
      for (Trans ta : {Trans::kNo, Trans::kYes}) {  // y = 0.5·op(A)·x + 2·y, A m×k
        const std::vector<float> a = Random(size_t(m) * k, rng);
        const int rows = ta == Trans::kNo ? m : k, inner = ta == Trans::kNo ? k : m;
        const std::vector<float> x = Random(inner, rng);
        std::vector<float> y = Random(rows, rng);
        const std::vector<float> y0 = y;
        cpu_gemv(ta, m, k, 0.5f, a.data(), x.data(), 2.0f, y.data());
        for (int i = 0; i < rows; ++i) {
          double sum = 0;
          for (int p = 0; p < inner; ++p)
            sum += double(ta == Trans::kNo ? a[size_t(i) * k + p] : a[size_t(p) * k + i]) * x[p];
          ASSERT_NEAR(y[i], 0.5 * sum + 2.0 * y0[i], 1e-4 * (1 + std::abs(sum)) * std::sqrt(inner)) << i;
        }
      }
    }
  }
  SetCpuEngine(saved);
}

TEST(CpuMath, TheCpuAndItsBlasAreDescribed) {
  const std::string isa = CpuInstructionSets();
  EXPECT_FALSE(isa.empty());
#if defined(__AVX2__)
  EXPECT_NE(isa.find("avx2"), std::string::npos) << isa;  // this binary was compiled to need it
#endif
  EXPECT_EQ(BlasKernels().rfind("OpenBLAS ", 0), 0u) << BlasKernels();
  EXPECT_FALSE(OneDnnInstructionSet().empty());
  EXPECT_EQ(OneDnnEnabled(), BuiltWithOneDnn() && CpuEngineSetting() != CpuEngine::kIm2col);
}

}  // namespace
}  // namespace cortado::test
