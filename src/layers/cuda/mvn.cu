// mvn.cu — MVN's kernels (kernels/zoo.hpp). One block per row (grid-stride over rows): the block sums
// its row in double with cub::BlockReduce, then each thread rewrites the elements it read itself, so
// the top may be the bottom and dx may be dy.
#include <cub/block/block_reduce.cuh>

#include "cortado/cuda/resources.hpp"  // cuda::Stream, CORTADO_LAUNCH
#include "cortado/kernels/zoo.hpp"

namespace cortado {

namespace {

using Reduce = cub::BlockReduce<double, cuda::kThreads>;

int GridFor(int64_t rows) { return static_cast<int>(rows < 65535 ? rows : 65535); }

__global__ void MVNForwardKernel(int64_t rows, int64_t dim, bool normalize_variance, float eps, const float* x,
                                 float* y, float* scale) {
  __shared__ typename Reduce::TempStorage storage;
  __shared__ float value;  // the row's mean, then its s
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* xr = x + r * dim;
    float* yr = y + r * dim;
    double sum = 0;
    for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) sum += xr[i];
    const double total = Reduce(storage).Sum(sum);
    if (threadIdx.x == 0) value = static_cast<float>(total / dim);
    __syncthreads();
    const float mean = value;
    for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) yr[i] = xr[i] - mean;
    if (normalize_variance) {
      double sq = 0;
      for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) sq += static_cast<double>(yr[i]) * yr[i];
      __syncthreads();  // every thread has read the mean; the storage is reused
      const double total_sq = Reduce(storage).Sum(sq);
      if (threadIdx.x == 0) {
        value = sqrtf(static_cast<float>(total_sq / dim)) + eps;
        scale[r] = value;
      }
      __syncthreads();
      const float s = value;
      for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) yr[i] /= s;
    }
    __syncthreads();  // before the next row reuses the storage and `value`
  }
}

__global__ void MVNBackwardKernel(int64_t rows, int64_t dim, bool normalize_variance, const float* y,
                                  const float* dy, const float* scale, float* dx) {
  __shared__ typename Reduce::TempStorage storage;
  __shared__ float sums[2];  // Σdy, Σ(y·dy)
  const float inv_dim = static_cast<float>(1.0 / dim);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* yr = y + r * dim;
    const float* dyr = dy + r * dim;
    float* dxr = dx + r * dim;
    double sum_dy = 0, sum_ydy = 0;
    for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) {
      sum_dy += dyr[i];
      if (normalize_variance) sum_ydy += static_cast<double>(yr[i]) * dyr[i];
    }
    const double total_dy = Reduce(storage).Sum(sum_dy);
    __syncthreads();  // the storage is reused
    const double total_ydy = Reduce(storage).Sum(sum_ydy);
    if (threadIdx.x == 0) {
      sums[0] = normalize_variance ? static_cast<float>(total_dy) : static_cast<float>(total_dy / dim);
      sums[1] = static_cast<float>(total_ydy);
    }
    __syncthreads();
    if (normalize_variance) {
      const float b = sums[0], a = sums[1], s = scale[r];
      for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) dxr[i] = (dyr[i] - inv_dim * (a * yr[i] + b)) / s;
    } else {
      const float mean = sums[0];
      for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) dxr[i] = dyr[i] - mean;
    }
    __syncthreads();  // before the next row reuses the storage and `sums`
  }
}

}  // namespace

void MVNForwardGpu(Context& ctx, int64_t rows, int64_t dim, bool normalize_variance, float eps, const float* x,
                   float* y, float* scale) {
  if (rows == 0 || dim == 0) return;
  CORTADO_LAUNCH(MVNForwardKernel, GridFor(rows), cuda::kThreads, 0, cuda::Stream(ctx), rows, dim, normalize_variance,
                 eps, x, y, scale);
}

void MVNBackwardGpu(Context& ctx, int64_t rows, int64_t dim, bool normalize_variance, const float* y,
                    const float* dy, const float* scale, float* dx) {
  if (rows == 0 || dim == 0) return;
  CORTADO_LAUNCH(MVNBackwardKernel, GridFor(rows), cuda::kThreads, 0, cuda::Stream(ctx), rows, dim, normalize_variance,
                 y, dy, scale, dx);
}

}  // namespace cortado
