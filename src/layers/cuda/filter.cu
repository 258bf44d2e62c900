// filter.cu — Filter's kernels and copies (filter_gpu.hpp): the selector to the host, the row maps to
// the device, the row gather forward and the row scatter (zeros for rows not selected) backward.
#include "../filter_gpu.hpp"
#include "cortado/cuda/resources.hpp"  // cuda::Stream, CORTADO_KERNEL_LOOP, CORTADO_CUDA_CHECK

namespace cortado {

namespace {

__global__ void FilterForwardKernel(int64_t total, int64_t dim, const int* rows, const float* x, float* y) {
  CORTADO_KERNEL_LOOP(e, total) y[e] = x[static_cast<int64_t>(rows[e / dim]) * dim + e % dim];
}

__global__ void FilterBackwardKernel(int64_t total, int64_t dim, const int* top_row, const float* dy, float* dx) {
  CORTADO_KERNEL_LOOP(e, total) {
    const int k = top_row[e / dim];
    dx[e] = k >= 0 ? dy[static_cast<int64_t>(k) * dim + e % dim] : 0.0f;
  }
}

}  // namespace

void FilterReadSelectorGpu(Context& ctx, int64_t n, const float* selector, float* selector_host) {
  if (n == 0) return;
  const cudaStream_t stream = cuda::Stream(ctx);
  CORTADO_CUDA_CHECK(cudaMemcpyAsync(selector_host, selector, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CORTADO_CUDA_CHECK(cudaStreamSynchronize(stream));
}

void FilterUploadMapsGpu(Context& ctx, const std::vector<int>& maps_host, int* maps) {
  if (maps_host.empty()) return;
  // From pageable memory: the call returns once the values are staged, so the vector may change after.
  CORTADO_CUDA_CHECK(cudaMemcpyAsync(maps, maps_host.data(), maps_host.size() * sizeof(int), cudaMemcpyHostToDevice,
                                     cuda::Stream(ctx)));
}

void FilterForwardGpu(Context& ctx, int64_t selected, int64_t dim, const int* maps, const float* x, float* y) {
  const int64_t total = selected * dim;
  if (total == 0) return;
  CORTADO_LAUNCH(FilterForwardKernel, cuda::BlocksFor(total), cuda::kThreads, 0, cuda::Stream(ctx), total, dim, maps, x,
                 y);
}

void FilterBackwardGpu(Context& ctx, int64_t num, int64_t dim, const int* maps, const float* dy, float* dx) {
  const int64_t total = num * dim;
  if (total == 0) return;
  CORTADO_LAUNCH(FilterBackwardKernel, cuda::BlocksFor(total), cuda::kThreads, 0, cuda::Stream(ctx), total, dim,
                 maps + num, dy, dx);
}

}  // namespace cortado
