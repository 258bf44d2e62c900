// math_gpu.hpp — the GPU twins of math.hpp: the same names with gpu_ for cpu_, the same row-major
// conventions, on device pointers, queued on the context's compute stream (cuBLAS for BLAS, small
// kernels for the rest). Nothing here waits for the GPU except the functions that return a number
// to the host (gpu_dot, gpu_asum, gpu_sumsq), which wait for their own result. No CUDA types here, so
// a layer's .cpp may call these in its Forward_gpu; a CPU-only build links stubs that throw.
#pragma once

#include <cstdint>

#include "cortado/context.hpp"
#include "cortado/kernels/storage_types.hpp"  // DataType
#include "cortado/math.hpp"                    // Trans

namespace cortado {

// C = alpha · op(A) · op(B) + beta · C, with op(A) M×K, op(B) K×N, C M×N, all row-major.
void gpu_gemm(Context& ctx, Trans trans_a, Trans trans_b, int m, int n, int k, float alpha, const float* a,
              const float* b, float beta, float* c);
// The same product on stored values: A and B of one storage type, C of that type or float, the sums in
// float (cublasGemmEx; tensor cores for 16-bit operands).
void gpu_gemm_stored(Context& ctx, Trans trans_a, Trans trans_b, int m, int n, int k, float alpha, DataType ab_type,
                     const void* a, const void* b, float beta, DataType c_type, void* c);
// y = alpha · op(A) · x + beta · y, A M×N row-major.
void gpu_gemv(Context& ctx, Trans trans_a, int m, int n, float alpha, const float* a, const float* x, float beta,
              float* y);
void gpu_axpy(Context& ctx, int64_t n, float alpha, const float* x, float* y);               // y += alpha·x
void gpu_axpby(Context& ctx, int64_t n, float alpha, const float* x, float beta, float* y);  // y = alpha·x + beta·y
void gpu_scale(Context& ctx, int64_t n, float alpha, float* x);                              // x *= alpha
void gpu_scale(Context& ctx, int64_t n, float alpha, const float* x, float* y);              // y = alpha·x
void gpu_copy(Context& ctx, int64_t n, const float* x, float* y);
// y = x on the context's device (cpu_copy or gpu_copy), for code written once for both devices.
inline void copy_on(Context& ctx, int64_t n, const float* x, float* y) {
  if (ctx.device() == Device::kGPU) {
    gpu_copy(ctx, n, x, y);
  } else {
    cpu_copy(n, x, y);
  }
}
void gpu_set(Context& ctx, int64_t n, float value, float* y);
float gpu_dot(Context& ctx, int64_t n, const float* x, const float* y);  // waits for the result
// *result += x·y on the device (result: one device float), summed in double in a fixed order; waits
// for nothing.
void gpu_dot_accumulate(Context& ctx, int64_t n, const float* x, const float* y, float* result);
float gpu_asum(Context& ctx, int64_t n, const float* x);                 // Σ|x|, waits
double gpu_sumsq(Context& ctx, int64_t n, const float* x);               // Σx² (in double: no overflow), waits

void gpu_add(Context& ctx, int64_t n, const float* a, const float* b, float* y);  // y = a + b
void gpu_sub(Context& ctx, int64_t n, const float* a, const float* b, float* y);  // y = a − b
void gpu_mul(Context& ctx, int64_t n, const float* a, const float* b, float* y);  // y = a · b
void gpu_div(Context& ctx, int64_t n, const float* a, const float* b, float* y);  // y = a / b
void gpu_add_scalar(Context& ctx, int64_t n, float alpha, float* y);              // y += alpha
void gpu_sign(Context& ctx, int64_t n, const float* x, float* y);                 // y = sign(x) ∈ {−1, 0, 1}

// Whether all n values are finite (one reduction; waits for the answer).
bool gpu_all_finite(Context& ctx, int64_t n, const float* x);

}  // namespace cortado
