// math.hpp — the CPU math every layer and solver uses: matrix products (oneDNN or OpenBLAS), plus the small
// element-wise loops BLAS lacks. Matrices are row-major. The GPU versions will keep these names in
// math_cuda.hpp.
#pragma once

#include <cstdint>

namespace cortado {

enum class Trans { kNo, kYes };

// C = alpha · op(A) · op(B) + beta · C, with op(A) M×K, op(B) K×N, C M×N. With oneDNN (cpu_engine.hpp)
// its SGEMM computes it, on the OpenMP threads outside a parallel region and on the calling thread
// inside one. With OpenBLAS, a large product outside a parallel region is split into row (or column)
// blocks across the OpenMP threads; BLAS itself always runs single-threaded, so its threads never
// compete with ours.
void cpu_gemm(Trans trans_a, Trans trans_b, int m, int n, int k, float alpha, const float* a,
              const float* b, float beta, float* c);
// y = alpha · op(A) · x + beta · y, with A M×N.
void cpu_gemv(Trans trans_a, int m, int n, float alpha, const float* a, const float* x, float beta,
              float* y);

void cpu_axpy(int64_t n, float alpha, const float* x, float* y);                 // y += alpha·x
void cpu_axpby(int64_t n, float alpha, const float* x, float beta, float* y);    // y = alpha·x + beta·y
void cpu_scale(int64_t n, float alpha, float* x);                                // x *= alpha
void cpu_scale(int64_t n, float alpha, const float* x, float* y);                // y = alpha·x
void cpu_copy(int64_t n, const float* x, float* y);
void cpu_set(int64_t n, float value, float* y);
float cpu_dot(int64_t n, const float* x, const float* y);
float cpu_asum(int64_t n, const float* x);   // Σ|x|
float cpu_sumsq(int64_t n, const float* x);  // Σx²

void cpu_add(int64_t n, const float* a, const float* b, float* y);  // y = a + b
void cpu_sub(int64_t n, const float* a, const float* b, float* y);  // y = a − b
void cpu_mul(int64_t n, const float* a, const float* b, float* y);  // y = a · b
void cpu_div(int64_t n, const float* a, const float* b, float* y);  // y = a / b
void cpu_add_scalar(int64_t n, float alpha, float* y);               // y += alpha
void cpu_sign(int64_t n, const float* x, float* y);                  // y = sign(x) ∈ {−1, 0, 1}

}  // namespace cortado
