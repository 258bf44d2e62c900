// gpu.cu — the device services of a CUDA build: device count and properties, the arena's one
// allocation (counted), synchronous copies, pinned host memory, and each Context's streams and
// library handles (GpuResources).
#include <cuda_runtime.h>
#include <glog/logging.h>

#include <atomic>
#include <cstdlib>
#include <sstream>
#include <string>

#include "cortado/cuda/cublas_library.hpp"
#include "cortado/cuda/resources.hpp"
#include "cortado/error.hpp"
#include "cortado/gpu.hpp"

namespace cortado {

namespace cuda {

void FailedCall(const char* library, const char* statement, const char* reason, const char* file, int line) {
  std::string where = file;
  where = where.substr(where.find_last_of('/') + 1);
  Fail("[", library, "] ", statement, " failed: ", reason, " (", where, ":", line, ")");
}

const char* CublasStatusText(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "cuBLAS not initialised";
    case CUBLAS_STATUS_ALLOC_FAILED: return "cuBLAS could not allocate memory";
    case CUBLAS_STATUS_INVALID_VALUE: return "invalid value";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "not supported by this GPU";
    case CUBLAS_STATUS_MAPPING_ERROR: return "memory mapping error";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "execution failed";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "internal error";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "not supported";
    default: return "unknown cuBLAS status";
  }
}

GpuResources& Resources(Context& ctx) {
  CHECK(ctx.device() == Device::kGPU && ctx.gpu() != nullptr) << "GPU code run with a CPU context";
  return *ctx.gpu();
}

}  // namespace cuda

namespace {
std::atomic<int64_t> allocations{0};
}  // namespace

int GpuCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device" status
    return 0;
  }
  return count;
}

bool BuiltWithCuda() { return true; }

void* GpuAllocate(size_t bytes) {
  void* pointer = nullptr;
  const cudaError_t status = cudaMalloc(&pointer, bytes);
  if (status != cudaSuccess) {
    cudaGetLastError();
    Fail("out of GPU memory: cudaMalloc(", bytes, " bytes) failed: ", cudaGetErrorString(status));
  }
  ++allocations;
  // The arena starts zeroed, as on the host. The memset runs on the legacy stream, which the contexts'
  // non-blocking streams do not wait for: finish it before any of their work can touch the memory.
  CORTADO_CUDA_CHECK(cudaMemset(pointer, 0, bytes));
  CORTADO_CUDA_CHECK(cudaDeviceSynchronize());
  return pointer;
}

void GpuFree(void* pointer) { cudaFree(pointer); }

int64_t GpuAllocationCount() { return allocations.load(); }

size_t GpuFreeMemory() {
  size_t free = 0, total = 0;
  CORTADO_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  return free;
}

void GpuCopy(void* destination, const void* source, size_t bytes) {
  if (bytes == 0) return;
  // The contexts' streams are non-blocking, so the legacy-stream cudaMemcpy is not ordered against
  // them: wait for all queued work first, and for the copy itself (a pageable host-to-device copy may
  // return before it lands).
  CORTADO_CUDA_CHECK(cudaDeviceSynchronize());
  CORTADO_CUDA_CHECK(cudaMemcpy(destination, source, bytes, cudaMemcpyDefault));
  CORTADO_CUDA_CHECK(cudaDeviceSynchronize());
}

std::string GpuProperties(int id) {
  cudaDeviceProp p{};
  CORTADO_CUDA_CHECK(cudaGetDeviceProperties(&p, id));
  int clock_khz = 0, memory_clock_khz = 0;
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, id);
  cudaDeviceGetAttribute(&memory_clock_khz, cudaDevAttrMemoryClockRate, id);
  cudaGetLastError();
  std::ostringstream out;
  out << "Device id:                     " << id << "\n"
      << "Name:                          " << p.name << "\n"
      << "Compute capability:            " << p.major << "." << p.minor << "\n"
      << "Total global memory:           " << p.totalGlobalMem << " bytes ("
      << p.totalGlobalMem / (1024 * 1024) << " MiB)\n"
      << "Multiprocessors:               " << p.multiProcessorCount << "\n"
      << "Shared memory per block:       " << p.sharedMemPerBlock << "\n"
      << "Registers per block:           " << p.regsPerBlock << "\n"
      << "Warp size:                     " << p.warpSize << "\n"
      << "Maximum threads per block:     " << p.maxThreadsPerBlock << "\n"
      << "Clock rate:                    " << clock_khz << " kHz\n"
      << "Memory clock rate:             " << memory_clock_khz << " kHz\n"
      << "Memory bus width:              " << p.memoryBusWidth << " bits\n"
      << "L2 cache:                      " << p.l2CacheSize << " bytes";
  return out.str();
}

GpuResources::GpuResources(int device_id) : device(device_id) {
  const int count = GpuCount();
  CORTADO_REQUIRE(count > 0, "no GPU found (cudaGetDeviceCount reports none); train with solver_mode: CPU");
  CORTADO_REQUIRE(device_id >= 0 && device_id < count, "GPU ", device_id, " does not exist (this machine has ",
                  count, " GPU", count == 1 ? "" : "s", ", ids 0 to ", count - 1, ")");
  CORTADO_CUDA_CHECK(cudaSetDevice(device_id));
  int major = 0;
  CORTADO_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device_id));
  const char* tf32_override = std::getenv("NVIDIA_TF32_OVERRIDE");  // NVIDIA's switch: 0 turns TF32 off
  has_tf32 = major >= 8 && !(tf32_override != nullptr && std::string(tf32_override) == "0");
  try {
    CORTADO_CUDA_CHECK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
    CORTADO_CUDA_CHECK(cudaStreamCreateWithFlags(&copy, cudaStreamNonBlocking));
    CORTADO_CUBLAS_CHECK(cuda::Cublas().create(&cublas));
    CORTADO_CUBLAS_CHECK(cuda::Cublas().set_stream(cublas, compute));
    cublas_workspace = GpuAllocate(kCublasWorkspaceBytes);
    CORTADO_CUBLAS_CHECK(cuda::Cublas().set_workspace(cublas, cublas_workspace, kCublasWorkspaceBytes));
    // Results of reductions (dot, asum, nrm2) come back to the host: the Blob-level API waits for them.
    CORTADO_CUBLAS_CHECK(cuda::Cublas().set_pointer_mode(cublas, CUBLAS_POINTER_MODE_HOST));
    finite_count = static_cast<unsigned int*>(GpuAllocate(sizeof(unsigned int)));
    CORTADO_CUDA_CHECK(cudaHostAlloc(&finite_count_host, sizeof(unsigned int), cudaHostAllocDefault));
#ifdef CORTADO_WITH_CUDNN
    CORTADO_CUDNN_CHECK(cudnnCreate(&cudnn));
    CORTADO_CUDNN_CHECK(cudnnSetStream(cudnn, compute));
#endif
    step_inputs = std::make_unique<StepInputs>(device_id);
  } catch (...) {
    Release();  // what was created before the failure; the destructor does not run
    throw;
  }
}

GpuResources::~GpuResources() { Release(); }

// Ignores errors: it may run while an earlier CUDA error unwinds.
void GpuResources::Release() {
  step_inputs.reset();
#ifdef CORTADO_WITH_CUDNN
  if (cudnn != nullptr) cudnnDestroy(cudnn);
  cudnn = nullptr;
#endif
  if (cublas != nullptr) cuda::Cublas().destroy(cublas);
  if (cublas_workspace != nullptr) GpuFree(cublas_workspace);
  cublas_workspace = nullptr;
  if (finite_count != nullptr) GpuFree(finite_count);
  if (finite_count_host != nullptr) cudaFreeHost(finite_count_host);
  finite_count = nullptr, finite_count_host = nullptr;
  if (copy != nullptr) cudaStreamDestroy(copy);
  if (compute != nullptr) cudaStreamDestroy(compute);
  cublas = nullptr, copy = nullptr, compute = nullptr;
}

std::shared_ptr<GpuResources> CreateGpuResources(int device_id) {
  return std::make_shared<GpuResources>(device_id);
}

void GpuSynchronize(GpuResources& resources) {
  CORTADO_CUDA_CHECK(cudaStreamSynchronize(resources.copy));
  CORTADO_CUDA_CHECK(cudaStreamSynchronize(resources.compute));
}

bool GpuHasTf32(const GpuResources& resources) { return resources.has_tf32; }

void GpuSetTf32(GpuResources& resources, bool tf32) {
  CORTADO_CUBLAS_CHECK(
      cuda::Cublas().set_math_mode(resources.cublas, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
}

void* HostAllocate(size_t bytes, bool* pinned) {
  void* pointer = nullptr;
  *pinned = GpuCount() > 0 && cudaHostAlloc(&pointer, bytes, cudaHostAllocDefault) == cudaSuccess;
  if (*pinned) return pointer;
  cudaGetLastError();
  pointer = std::malloc(bytes);
  if (pointer == nullptr) Fail("out of host memory: cannot allocate ", bytes, " bytes");
  return pointer;
}

void HostFree(void* pointer, bool pinned) {
  if (pinned) {
    cudaFreeHost(pointer);
  } else {
    std::free(pointer);
  }
}

}  // namespace cortado
