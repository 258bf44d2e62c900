// cublas_library.hpp — cuBLAS, opened when the first GPU's resources are made instead of with the
// program. CUDA sources only.
//
// libcublas runs its start-up (about 0.4 s of CPU) in every process that links it, whether or not the
// process ever touches a GPU: each CPU-only run of a tool pays it, and so does each of the test
// suite's processes. So Cortado does not link it: Cublas() opens it (dlopen) on its first call and
// hands out the functions Cortado calls, typed as cublas_v2.h declares them.
#pragma once

#include <cublas_v2.h>

namespace cortado::cuda {

struct CublasLibrary {
  decltype(&cublasCreate) create;
  decltype(&cublasDestroy) destroy;
  decltype(&cublasSetStream) set_stream;
  decltype(&cublasSetWorkspace) set_workspace;
  decltype(&cublasSetPointerMode) set_pointer_mode;
  decltype(&cublasSetMathMode) set_math_mode;
  decltype(&cublasSgemm) sgemm;
  // cublasGemmEx (its C declaration: C++ adds an overload taking a cudaDataType_t compute type).
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                            const void*, cudaDataType_t, int, const void*, cudaDataType_t, int, const void*, void*,
                            cudaDataType_t, int, cublasComputeType_t, cublasGemmAlgo_t);
  decltype(&cublasSgemv) sgemv;
  decltype(&cublasSaxpy) saxpy;
  decltype(&cublasSdot) sdot;
  decltype(&cublasSasum) sasum;
  decltype(&cublasSnrm2) snrm2;
};

// The library, opened on the first call (libcublas.so.<the headers' major version>, found as the
// dynamic linker finds libraries, then in the CUDA toolkit Cortado was built with); one that cannot be
// opened is an Error saying what was tried and why it failed. Safe to call from any thread.
const CublasLibrary& Cublas();

}  // namespace cortado::cuda
