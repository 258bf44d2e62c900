// resources.hpp — what a GPU Context holds: the device, its compute stream (every layer's kernels and
// library calls), a copy stream (data batches host → device, ordered against compute by events), and
// the cuBLAS and cuDNN handles bound to the compute stream. CUDA sources only; reach it through
// Context::gpu().
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <memory>

#include "cortado/context.hpp"
#include "cortado/cuda/check.hpp"
#include "cortado/step_inputs.hpp"

namespace cortado {

struct GpuResources {
  explicit GpuResources(int device_id);
  ~GpuResources();
  GpuResources(const GpuResources&) = delete;
  GpuResources& operator=(const GpuResources&) = delete;
  void Release();  // destroys the handles and streams created so far

  int device = 0;
  bool has_tf32 = false;  // compute capability 8.0 or newer, NVIDIA_TF32_OVERRIDE not 0
  cudaStream_t compute = nullptr;
  cudaStream_t copy = nullptr;
  cublasHandle_t cublas = nullptr;
  // cuBLAS's workspace, given to it once (cublasSetWorkspace) so that it never allocates inside a
  // step or a CUDA graph capture; 32 MiB, NVIDIA's advice for Hopper.
  static constexpr size_t kCublasWorkspaceBytes = size_t{32} << 20;
  void* cublas_workspace = nullptr;
  // gpu_all_finite's count of non-finite values: a device word, read back through a pinned one.
  unsigned int* finite_count = nullptr;
  unsigned int* finite_count_host = nullptr;
  std::unique_ptr<StepInputs> step_inputs;  // StepInputsOf(ctx)
#ifdef CORTADO_WITH_CUDNN
  cudnnHandle_t cudnn = nullptr;
#endif
};

namespace cuda {

// The context's GPU resources; CHECKs that the context is a GPU one.
GpuResources& Resources(Context& ctx);
inline cudaStream_t Stream(Context& ctx) { return Resources(ctx).compute; }

}  // namespace cuda

}  // namespace cortado
