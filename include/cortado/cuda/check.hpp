// check.hpp — checked CUDA, cuBLAS and cuDNN calls, and RAII owners of streams and events.
// CUDA sources only.
//
// CORTADO_CUDA_CHECK(statement) and its cuBLAS/cuDNN siblings turn a failed status into a
// cortado::Error whose message holds the statement's text and the library's reason:
//   "[cuda] cudaMemcpyAsync(...) failed: an illegal memory access was encountered (layer.cu:42)".
// Out-of-memory and a missing device are a user's problem, reported as one line by the tools; any
// other failure is a bug, but an Error still carries the statement to the log without a stack trace.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <string>

#include "cortado/error.hpp"

#ifdef CORTADO_WITH_CUDNN
#include <cudnn.h>
#endif

namespace cortado::cuda {

const char* CublasStatusText(cublasStatus_t status);

[[noreturn]] void FailedCall(const char* library, const char* statement, const char* reason, const char* file,
                             int line);

}  // namespace cortado::cuda

#define CORTADO_CUDA_CHECK(statement)                                                                  \
  do {                                                                                                 \
    const cudaError_t cortado_status_ = (statement);                                                   \
    if (cortado_status_ != cudaSuccess) {                                                              \
      cudaGetLastError();                                                                              \
      ::cortado::cuda::FailedCall("cuda", #statement, cudaGetErrorString(cortado_status_), __FILE__, __LINE__); \
    }                                                                                                  \
  } while (0)

#define CORTADO_CUBLAS_CHECK(statement)                                                                \
  do {                                                                                                 \
    const cublasStatus_t cortado_status_ = (statement);                                                \
    if (cortado_status_ != CUBLAS_STATUS_SUCCESS)                                                      \
      ::cortado::cuda::FailedCall("cublas", #statement, ::cortado::cuda::CublasStatusText(cortado_status_), \
                                  __FILE__, __LINE__);                                                 \
  } while (0)

#ifdef CORTADO_WITH_CUDNN
#define CORTADO_CUDNN_CHECK(statement)                                                                 \
  do {                                                                                                 \
    const cudnnStatus_t cortado_status_ = (statement);                                                 \
    if (cortado_status_ != CUDNN_STATUS_SUCCESS)                                                       \
      ::cortado::cuda::FailedCall("cudnn", #statement, cudnnGetErrorString(cortado_status_), __FILE__, \
                                  __LINE__);                                                           \
  } while (0)
#endif

// Every kernel launch goes through CORTADO_LAUNCH(kernel, grid, block, shared_bytes, stream, args...):
// an empty grid (no elements) launches nothing, and a launch the device refuses (a bad configuration)
// throws with the launch's own text, without waiting for the kernel. A kernel template with commas in
// its arguments is written in parentheses: CORTADO_LAUNCH((Sums<Term, 2>), ...).
#define CORTADO_LAUNCH(kernel, grid, block, shared_bytes, stream, ...)                                  \
  ::cortado::cuda::Launch("CORTADO_LAUNCH(" #kernel ", " #grid ", " #block ")", __FILE__, __LINE__, (grid), \
                          (block), (shared_bytes), (stream), kernel, __VA_ARGS__)

namespace cortado::cuda {

template <typename... Params, typename... Args>
void Launch(const char* text, const char* file, int line, dim3 grid, dim3 block, size_t shared_bytes,
            cudaStream_t stream, void (*kernel)(Params...), Args&&... args) {
  if (static_cast<size_t>(grid.x) * grid.y * grid.z == 0) return;
#if defined(__CUDACC__)
  kernel<<<grid, block, shared_bytes, stream>>>(static_cast<Params>(args)...);
#endif
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) FailedCall("cuda", text, cudaGetErrorString(status), file, line);
}

}  // namespace cortado::cuda

namespace cortado::cuda {

// One CUDA event, destroyed with its owner (errors on destruction are ignored: it may run while an
// earlier CUDA error unwinds).
class Event {
 public:
  Event() { CORTADO_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming)); }
  explicit Event(bool timing) {
    CORTADO_CUDA_CHECK(cudaEventCreateWithFlags(&event_, timing ? cudaEventDefault : cudaEventDisableTiming));
  }
  ~Event() {
    if (event_ != nullptr) cudaEventDestroy(event_);
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

// Threads per block of the element-wise kernels.
constexpr int kThreads = 256;

// Blocks of `per_block` work items that cover `work`, at least 1 and at most `most` (grid-stride loops
// cover the rest when the work is huge).
inline unsigned GridFor(int64_t work, int64_t per_block, int64_t most) {
  const int64_t blocks = (work + per_block - 1) / per_block;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > most ? most : blocks));
}

// The 1-D grid of kThreads-thread blocks over n elements.
inline int BlocksFor(int64_t n) { return static_cast<int>(GridFor(n, kThreads, 65535 * 8)); }

}  // namespace cortado::cuda

// for (i = index; i < n; i += stride) over a 1-D grid: a kernel's element loop.
#define CORTADO_KERNEL_LOOP(i, n)                                                    \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)
