// math_gpu.cu — math_gpu.hpp: cuBLAS for the BLAS calls (row-major operands passed as their
// column-major transposes), kernels/arithmetic.hpp's functors (shared with math_cpu.cpp) for the
// element-wise rest, all on the context's compute stream. The reductions that return a number wait
// for it.
#include <cublas_v2.h>
#include <cub/block/block_reduce.cuh>
#include <glog/logging.h>

#include <cmath>
#include <limits>

#include "cortado/cuda/cublas_library.hpp"
#include "cortado/cuda/for_each.cuh"  // MapGpu
#include "cortado/cuda/resources.hpp"
#include "cortado/kernels/arithmetic.hpp"
#include "cortado/math_gpu.hpp"

namespace cortado {

namespace {

using cuda::BlocksFor;
using cuda::kThreads;

cublasOperation_t Op(Trans t) { return t == Trans::kYes ? CUBLAS_OP_T : CUBLAS_OP_N; }

// cuBLAS counts in int; tensors here stay below 2^31 elements per call (a Blob's count is checked).
int AsInt(int64_t n) {
  CHECK_LE(n, static_cast<int64_t>(std::numeric_limits<int>::max())) << "a GPU BLAS call of " << n << " elements";
  return static_cast<int>(n);
}

__global__ void CountNonFiniteKernel(int64_t n, const float* x, unsigned int* bad) {
  unsigned int local = 0;
  CORTADO_KERNEL_LOOP(i, n) local += !isfinite(x[i]);
  if (local) atomicAdd(bad, local);
}

}  // namespace

// kernels/arithmetic.hpp's functors on the GPU, for math_gpu.hpp and for the layers that use them.
CORTADO_GPU_MAP(arithmetic::Constant, float*);
CORTADO_GPU_MAP_STORED_1(arithmetic::Scaled);
CORTADO_GPU_MAP(arithmetic::Axpby, float*, const float*, const float*);
CORTADO_GPU_MAP(arithmetic::PlusConstant, float*, const float*);
CORTADO_GPU_MAP(arithmetic::Sign, float*, const float*);
CORTADO_GPU_MAP_STORED_2(arithmetic::Sum);
CORTADO_GPU_MAP(arithmetic::Difference, float*, const float*, const float*);
CORTADO_GPU_MAP(arithmetic::Product, float*, const float*, const float*);
CORTADO_GPU_MAP(arithmetic::Quotient, float*, const float*, const float*);

void gpu_gemm(Context& ctx, Trans trans_a, Trans trans_b, int m, int n, int k, float alpha, const float* a,
              const float* b, float beta, float* c) {
  if (m == 0 || n == 0) return;  // nothing to write (and cuBLAS rejects leading dimensions of 0)
  // Row-major C = op(A)·op(B) is column-major Cᵀ = op(B)ᵀ·op(A)ᵀ: swap the operands.
  const int lda = trans_a == Trans::kNo ? k : m;
  const int ldb = trans_b == Trans::kNo ? n : k;
  CORTADO_CUBLAS_CHECK(cuda::Cublas().sgemm(cuda::Resources(ctx).cublas, Op(trans_b), Op(trans_a), n, m, k, &alpha, b,
                                           ldb, a, lda, &beta, c, n));
}

namespace {
cudaDataType_t CudaType(DataType type) {
  switch (type) {
    case DataType::kBFloat16: return CUDA_R_16BF;
    case DataType::kFloat16: return CUDA_R_16F;
    case DataType::kFloat: break;
  }
  return CUDA_R_32F;
}
}  // namespace

void gpu_gemm_stored(Context& ctx, Trans trans_a, Trans trans_b, int m, int n, int k, float alpha, DataType ab_type,
                     const void* a, const void* b, float beta, DataType c_type, void* c) {
  if (m == 0 || n == 0) return;
  const int lda = trans_a == Trans::kNo ? k : m;
  const int ldb = trans_b == Trans::kNo ? n : k;
  // Float sums: float operands keep the handle's math mode (TF32 where the context allows it).
  CORTADO_CUBLAS_CHECK(cuda::Cublas().gemm_ex(cuda::Resources(ctx).cublas, Op(trans_b), Op(trans_a), n, m, k, &alpha, b,
                                              CudaType(ab_type), ldb, a, CudaType(ab_type), lda, &beta, c,
                                              CudaType(c_type), n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

void gpu_gemv(Context& ctx, Trans trans_a, int m, int n, float alpha, const float* a, const float* x, float beta,
              float* y) {
  if (m == 0 || n == 0) return;
  // Row-major A (M×N) is column-major Aᵀ (N×M): flip the transpose.
  const cublasOperation_t op = trans_a == Trans::kNo ? CUBLAS_OP_T : CUBLAS_OP_N;
  CORTADO_CUBLAS_CHECK(cuda::Cublas().sgemv(cuda::Resources(ctx).cublas, op, n, m, &alpha, a, n, x, 1, &beta, y, 1));
}

void gpu_axpy(Context& ctx, int64_t n, float alpha, const float* x, float* y) {
  if (n == 0) return;
  CORTADO_CUBLAS_CHECK(cuda::Cublas().saxpy(cuda::Resources(ctx).cublas, AsInt(n), &alpha, x, 1, y, 1));
}

void gpu_axpby(Context& ctx, int64_t n, float alpha, const float* x, float beta, float* y) {
  Map(ctx, n, arithmetic::Axpby{alpha, beta}, y, x, y);
}

void gpu_scale(Context& ctx, int64_t n, float alpha, float* x) { gpu_scale(ctx, n, alpha, x, x); }

void gpu_scale(Context& ctx, int64_t n, float alpha, const float* x, float* y) {
  Map(ctx, n, arithmetic::Scaled{alpha}, y, x);
}

void gpu_copy(Context& ctx, int64_t n, const float* x, float* y) {
  if (n == 0 || x == y) return;
  CORTADO_CUDA_CHECK(cudaMemcpyAsync(y, x, n * sizeof(float), cudaMemcpyDeviceToDevice, cuda::Stream(ctx)));
}

void gpu_set(Context& ctx, int64_t n, float value, float* y) {
  if (n == 0) return;
  if (value == 0.0f) {
    CORTADO_CUDA_CHECK(cudaMemsetAsync(y, 0, n * sizeof(float), cuda::Stream(ctx)));
    return;
  }
  Map(ctx, n, arithmetic::Constant{value}, y);
}

float gpu_dot(Context& ctx, int64_t n, const float* x, const float* y) {
  float result = 0;
  if (n > 0) CORTADO_CUBLAS_CHECK(cuda::Cublas().sdot(cuda::Resources(ctx).cublas, AsInt(n), x, 1, y, 1, &result));
  return result;
}

namespace {

// One block: each thread sums its stride in double, the block reduces, thread 0 adds to *result.
__global__ void DotAccumulateKernel(int64_t n, const float* x, const float* y, float* result) {
  double sum = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) sum += static_cast<double>(x[i]) * y[i];
  using Reduce = cub::BlockReduce<double, kThreads>;
  __shared__ typename Reduce::TempStorage storage;
  const double total = Reduce(storage).Sum(sum);
  if (threadIdx.x == 0) *result += static_cast<float>(total);
}

}  // namespace

void gpu_dot_accumulate(Context& ctx, int64_t n, const float* x, const float* y, float* result) {
  if (n == 0) return;
  CORTADO_LAUNCH(DotAccumulateKernel, 1, kThreads, 0, cuda::Stream(ctx), n, x, y, result);
}

float gpu_asum(Context& ctx, int64_t n, const float* x) {
  float result = 0;
  if (n > 0) CORTADO_CUBLAS_CHECK(cuda::Cublas().sasum(cuda::Resources(ctx).cublas, AsInt(n), x, 1, &result));
  return result;
}

double gpu_sumsq(Context& ctx, int64_t n, const float* x) {
  float norm = 0;
  if (n > 0) CORTADO_CUBLAS_CHECK(cuda::Cublas().snrm2(cuda::Resources(ctx).cublas, AsInt(n), x, 1, &norm));
  return static_cast<double>(norm) * norm;  // squared in double: a norm above ~1.8e19 stays finite
}

void gpu_add(Context& ctx, int64_t n, const float* a, const float* b, float* y) {
  Map(ctx, n, arithmetic::Sum{}, y, a, b);
}
void gpu_sub(Context& ctx, int64_t n, const float* a, const float* b, float* y) {
  Map(ctx, n, arithmetic::Difference{}, y, a, b);
}
void gpu_mul(Context& ctx, int64_t n, const float* a, const float* b, float* y) {
  Map(ctx, n, arithmetic::Product{}, y, a, b);
}
void gpu_div(Context& ctx, int64_t n, const float* a, const float* b, float* y) {
  Map(ctx, n, arithmetic::Quotient{}, y, a, b);
}

void gpu_add_scalar(Context& ctx, int64_t n, float alpha, float* y) {
  Map(ctx, n, arithmetic::PlusConstant{alpha}, y, y);
}

void gpu_sign(Context& ctx, int64_t n, const float* x, float* y) {
  Map(ctx, n, arithmetic::Sign{}, y, x);
}

bool gpu_all_finite(Context& ctx, int64_t n, const float* x) {
  if (n == 0) return true;
  // The context's device counter, zeroed, counted into and copied back on the compute stream.
  GpuResources& gpu = cuda::Resources(ctx);
  const cudaStream_t stream = cuda::Stream(ctx);
  CORTADO_CUDA_CHECK(cudaMemsetAsync(gpu.finite_count, 0, sizeof(unsigned int), stream));
  CORTADO_LAUNCH(CountNonFiniteKernel, BlocksFor(n), kThreads, 0, stream, n, x, gpu.finite_count);
  CORTADO_CUDA_CHECK(cudaMemcpyAsync(gpu.finite_count_host, gpu.finite_count, sizeof(unsigned int),
                                     cudaMemcpyDeviceToHost, stream));
  CORTADO_CUDA_CHECK(cudaStreamSynchronize(stream));
  return *gpu.finite_count_host == 0;
}

}  // namespace cortado
