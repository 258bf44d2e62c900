// math_cpu.cpp — CPU math: matrix products with oneDNN's SGEMM (its kernels follow the CPU's instruction
// sets) or, with the CPU engine im2col or no oneDNN, CBLAS (OpenBLAS); the element-wise rest runs
// kernels/arithmetic.hpp's functors, which math_gpu.cu runs on the GPU.
#include "cortado/math.hpp"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "cortado/cpu_engine.hpp"
#include "cortado/kernels/arithmetic.hpp"
#include "onednn_math.hpp"  // OneDnnGemm

namespace cortado {

namespace {
CBLAS_TRANSPOSE ToCblas(Trans t) { return t == Trans::kYes ? CblasTrans : CblasNoTrans; }
}  // namespace

// BLAS runs on the calling thread; the parallelism is Cortado's own (OpenMP).
const bool kBlasSingleThreaded = [] {
  openblas_set_num_threads(1);
  return true;
}();

void cpu_gemm(Trans trans_a, Trans trans_b, int m, int n, int k, float alpha, const float* a,
              const float* b, float beta, float* c) {
  const int lda = trans_a == Trans::kNo ? k : m;
  const int ldb = trans_b == Trans::kNo ? n : k;
  if (OneDnnEnabled()) {  // oneDNN threads the product itself (one thread inside a parallel region)
    OneDnnGemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, n);
    return;
  }
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  constexpr int64_t kMinWorkPerThread = int64_t{1} << 18;  // multiply-adds; below this, one thread
  const int64_t work = static_cast<int64_t>(m) * n * k;
  const int parts = static_cast<int>(std::min<int64_t>(threads, std::max<int64_t>(1, work / kMinWorkPerThread)));
  if (parts <= 1) {
    cblas_sgemm(CblasRowMajor, ToCblas(trans_a), ToCblas(trans_b), m, n, k, alpha, a, lda, b, ldb,
                beta, c, n);
    return;
  }
  // Split the larger of M (rows of A and C) and N (columns of B and C) into `parts` blocks.
  const bool by_rows = m >= n;
  const int extent = by_rows ? m : n;
#pragma omp parallel for num_threads(parts) schedule(static)
  for (int p = 0; p < parts; ++p) {
    const int begin = static_cast<int>(static_cast<int64_t>(extent) * p / parts);
    const int size = static_cast<int>(static_cast<int64_t>(extent) * (p + 1) / parts) - begin;
    if (by_rows) {
      const float* a_block = a + (trans_a == Trans::kNo ? static_cast<int64_t>(begin) * lda : begin);
      cblas_sgemm(CblasRowMajor, ToCblas(trans_a), ToCblas(trans_b), size, n, k, alpha, a_block, lda,
                  b, ldb, beta, c + static_cast<int64_t>(begin) * n, n);
    } else {
      const float* b_block = b + (trans_b == Trans::kNo ? begin : static_cast<int64_t>(begin) * ldb);
      cblas_sgemm(CblasRowMajor, ToCblas(trans_a), ToCblas(trans_b), m, size, k, alpha, a, lda,
                  b_block, ldb, beta, c + begin, n);
    }
  }
}

void cpu_gemv(Trans trans_a, int m, int n, float alpha, const float* a, const float* x, float beta,
              float* y) {
  if (OneDnnEnabled()) {  // y (length M of op(A)) as a one-column product
    const int rows = trans_a == Trans::kNo ? m : n, inner = trans_a == Trans::kNo ? n : m;
    OneDnnGemm(trans_a, Trans::kNo, rows, 1, inner, alpha, a, n, x, 1, beta, y, 1);
    return;
  }
  cblas_sgemv(CblasRowMajor, ToCblas(trans_a), m, n, alpha, a, n, x, 1, beta, y, 1);
}

void cpu_axpy(int64_t n, float alpha, const float* x, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

void cpu_axpby(int64_t n, float alpha, const float* x, float beta, float* y) {
  MapCpu(n, arithmetic::Axpby{alpha, beta}, y, x, y);
}

void cpu_scale(int64_t n, float alpha, float* x) { cpu_scale(n, alpha, x, x); }

void cpu_scale(int64_t n, float alpha, const float* x, float* y) { MapCpu(n, arithmetic::Scaled{alpha}, y, x); }

void cpu_copy(int64_t n, const float* x, float* y) {
  if (x != y && n > 0) std::memcpy(y, x, sizeof(float) * n);
}

void cpu_set(int64_t n, float value, float* y) {
  if (value == 0.0f) {
    if (n > 0) std::memset(y, 0, sizeof(float) * n);
    return;
  }
  MapCpu(n, arithmetic::Constant{value}, y);
}

float cpu_dot(int64_t n, const float* x, const float* y) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * y[i];
  return static_cast<float>(sum);
}

float cpu_asum(int64_t n, const float* x) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += std::fabs(x[i]);
  return static_cast<float>(sum);
}

float cpu_sumsq(int64_t n, const float* x) { return cpu_dot(n, x, x); }

void cpu_add(int64_t n, const float* a, const float* b, float* y) { MapCpu(n, arithmetic::Sum{}, y, a, b); }
void cpu_sub(int64_t n, const float* a, const float* b, float* y) { MapCpu(n, arithmetic::Difference{}, y, a, b); }
void cpu_mul(int64_t n, const float* a, const float* b, float* y) { MapCpu(n, arithmetic::Product{}, y, a, b); }
void cpu_div(int64_t n, const float* a, const float* b, float* y) { MapCpu(n, arithmetic::Quotient{}, y, a, b); }
void cpu_add_scalar(int64_t n, float alpha, float* y) { MapCpu(n, arithmetic::PlusConstant{alpha}, y, y); }
void cpu_sign(int64_t n, const float* x, float* y) { MapCpu(n, arithmetic::Sign{}, y, x); }

}  // namespace cortado
