// shape_ops.cu — the kernels behind Crop, Tile, Reduction and ArgMax (kernels/shape_ops.hpp): an
// index-mapped copy for Crop, a repeat and a sum over copies for Tile, a block reduction per row for
// Reduction and a per-search selection of the top_k (value, index) pairs for ArgMax.
#include "cortado/blob.hpp"            // Blob::kMaxAxes
#include "cortado/cuda/resources.hpp"  // cuda::Stream, CORTADO_KERNEL_LOOP, CORTADO_LAUNCH
#include "cortado/kernels/shape_ops.hpp"

namespace cortado {

namespace {

// ---- Crop ----------------------------------------------------------------------------------------
// The top's shape and, per axis, the bottom stride; base = the bottom index of the top's origin.
struct CropGeometry {
  int num_axes;
  int64_t top_shape[Blob::kMaxAxes];
  int64_t bottom_stride[Blob::kMaxAxes];
  int64_t base;
};

__global__ void CropKernel(int64_t n, CropGeometry g, const float* src, float* dst, bool backward) {
  CORTADO_KERNEL_LOOP(i, n) {
    int64_t rest = i, b = g.base;
    for (int d = g.num_axes - 1; d >= 0; --d) {
      b += (rest % g.top_shape[d]) * g.bottom_stride[d];
      rest /= g.top_shape[d];
    }
    if (backward) {
      dst[b] = src[i];
    } else {
      dst[i] = src[b];
    }
  }
}

// ---- Tile ----------------------------------------------------------------------------------------
__global__ void TileForwardKernel(int64_t n, int64_t inner, int tiles, const float* x, float* y) {
  CORTADO_KERNEL_LOOP(i, n) {  // i indexes y
    const int64_t j = i % inner, o = i / inner / tiles;
    y[i] = x[o * inner + j];
  }
}

__global__ void TileBackwardKernel(int64_t n, int64_t inner, int tiles, const float* dy, float* dx) {
  CORTADO_KERNEL_LOOP(i, n) {  // i indexes dx
    const int64_t j = i % inner, o = i / inner;
    const float* row = dy + o * tiles * inner + j;
    float sum = 0;
    for (int t = 0; t < tiles; ++t) sum += row[t * inner];
    dx[i] = sum;
  }
}

// ---- Reduction -----------------------------------------------------------------------------------
// One block per row (grid-stride over rows); each thread sums a strided part in double, then a tree.
__global__ void ReductionForwardKernel(int op, int64_t num, int64_t dim, float coeff, const float* x, float* y) {
  __shared__ double partial[cuda::kThreads];
  for (int64_t row = blockIdx.x; row < num; row += gridDim.x) {
    const float* r = x + row * dim;
    double sum = 0;
    for (int64_t j = threadIdx.x; j < dim; j += blockDim.x) {
      const double v = r[j];
      sum += op == 2 ? fabs(v) : op == 3 ? v * v : v;
    }
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
      if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
      __syncthreads();
    }
    if (threadIdx.x == 0) y[row] = static_cast<float>(coeff * partial[0]);
    __syncthreads();  // partial is reused by the next row
  }
}

__global__ void ReductionBackwardKernel(int op, int64_t n, int64_t dim, float coeff, const float* x,
                                        const float* dy, float* dx) {
  CORTADO_KERNEL_LOOP(i, n) {
    const float g = coeff * dy[i / dim];
    if (op != 2 && op != 3) {  // SUM, MEAN: x is not read (the layer says so to the memory plan)
      dx[i] = g;
      continue;
    }
    const float v = x[i];
    dx[i] = op == 2 ? g * static_cast<float>((0 < v) - (v < 0)) : g * 2 * v;
  }
}

// ---- ArgMax --------------------------------------------------------------------------------------
// (a, ia) ranks before (b, ib): the larger value, or the larger index among equal values.
__device__ bool RanksBefore(float a, int ia, float b, int ib) { return a > b || (a == b && ia > ib); }

__global__ void ArgMaxKernel(int64_t num, int dim, int64_t stride, int top_k, bool pairs_layout,
                             bool write_values, const float* x, float* y) {
  CORTADO_KERNEL_LOOP(i, num) {
    const float* base = x + (i / stride) * dim * stride + i % stride;
    float prev = 0;
    int prev_index = -1;  // -1: no pick yet
    for (int r = 0; r < top_k; ++r) {
      // The best pair that ranks after the previous pick.
      float best = 0;
      int best_index = -1;
      for (int j = 0; j < dim; ++j) {
        const float v = base[j * stride];
        if (prev_index >= 0 && !RanksBefore(prev, prev_index, v, j)) continue;
        if (best_index < 0 || RanksBefore(v, j, best, best_index)) {
          best = v;
          best_index = j;
        }
      }
      if (pairs_layout) {
        y[2 * i * top_k + r] = static_cast<float>(best_index);
        y[2 * i * top_k + top_k + r] = best;
      } else {
        y[((i / stride) * top_k + r) * stride + i % stride] = write_values ? best : static_cast<float>(best_index);
      }
      prev = best;
      prev_index = best_index;
    }
  }
}

}  // namespace

void CropCopyGpu(Context& ctx, int num_axes, const int* top_shape, const int* bottom_shape, const int* offsets,
                 const float* src, float* dst, bool backward) {
  CropGeometry g{};
  g.num_axes = num_axes;
  int64_t n = 1, stride = 1;
  for (int d = num_axes - 1; d >= 0; --d) {
    g.top_shape[d] = top_shape[d];
    g.bottom_stride[d] = stride;
    g.base += offsets[d] * stride;
    stride *= bottom_shape[d];
    n *= top_shape[d];
  }
  if (n == 0) return;
  CORTADO_LAUNCH(CropKernel, cuda::BlocksFor(n), cuda::kThreads, 0, cuda::Stream(ctx), n, g, src, dst, backward);
}

void TileForwardGpu(Context& ctx, int64_t outer, int64_t inner, int tiles, const float* x, float* y) {
  const int64_t n = outer * tiles * inner;
  if (n == 0) return;
  CORTADO_LAUNCH(TileForwardKernel, cuda::BlocksFor(n), cuda::kThreads, 0, cuda::Stream(ctx), n, inner, tiles, x, y);
}

void TileBackwardGpu(Context& ctx, int64_t outer, int64_t inner, int tiles, const float* dy, float* dx) {
  const int64_t n = outer * inner;
  if (n == 0) return;
  CORTADO_LAUNCH(TileBackwardKernel, cuda::BlocksFor(n), cuda::kThreads, 0, cuda::Stream(ctx), n, inner, tiles, dy, dx);
}

void ReductionForwardGpu(Context& ctx, int op, int64_t num, int64_t dim, float coeff, const float* x, float* y) {
  if (num == 0) return;
  const int blocks = static_cast<int>(num < 65535 * 8 ? num : 65535 * 8);
  CORTADO_LAUNCH(ReductionForwardKernel, blocks, cuda::kThreads, 0, cuda::Stream(ctx), op, num, dim, coeff, x, y);
}

void ReductionBackwardGpu(Context& ctx, int op, int64_t num, int64_t dim, float coeff, const float* x,
                          const float* dy, float* dx) {
  const int64_t n = num * dim;
  if (n == 0) return;
  CORTADO_LAUNCH(ReductionBackwardKernel, cuda::BlocksFor(n), cuda::kThreads, 0, cuda::Stream(ctx), op, n, dim, coeff,
                 x, dy, dx);
}

void ArgMaxForwardGpu(Context& ctx, int64_t num, int dim, int64_t stride, int top_k, bool pairs_layout,
                      bool write_values, const float* x, float* y) {
  if (num == 0) return;
  CORTADO_LAUNCH(ArgMaxKernel, cuda::BlocksFor(num), cuda::kThreads, 0, cuda::Stream(ctx), num, dim, stride, top_k,
                 pairs_layout, write_values, x, y);
}

}  // namespace cortado
