// cublas_library.cpp — Cublas(): libcublas opened on first use (cublas_library.hpp).
#include "cortado/cuda/cublas_library.hpp"

#include <dlfcn.h>

#include <string>
#include <vector>

#include "cortado/error.hpp"

// The name a cublas_v2.h function has in the library (cublasSgemm is cublasSgemm_v2 there).
#define CORTADO_SYMBOL_NAME(function) CORTADO_SYMBOL_NAME_EXPANDED(function)
#define CORTADO_SYMBOL_NAME_EXPANDED(function) #function

namespace cortado::cuda {

namespace {

template <typename Function>
void Resolve(void* library, const char* name, const std::string& path, Function* function) {
  void* symbol = ::dlsym(library, name);
  CORTADO_REQUIRE(symbol != nullptr, "cuBLAS '", path, "' has no ", name, ": it is older than the CUDA toolkit ",
                  "Cortado was built with (cuBLAS ", CUBLAS_VER_MAJOR, ".", CUBLAS_VER_MINOR, ")");
  *function = reinterpret_cast<Function>(symbol);
}

CublasLibrary Open() {
  const std::string soname = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
  std::vector<std::string> candidates = {soname};  // as the dynamic linker finds libraries, then the toolkit's
#ifdef CORTADO_CUDA_LIBRARY_DIR
  candidates.push_back(std::string(CORTADO_CUDA_LIBRARY_DIR) + "/" + soname);
#endif
  void* library = nullptr;
  std::string path, tried, reason;
  for (const std::string& candidate : candidates) {
    path = candidate;
    tried += (tried.empty() ? "" : " and ") + candidate;
    library = ::dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library != nullptr) break;
    reason = ::dlerror();
  }
  CORTADO_REQUIRE(library != nullptr, "cannot load cuBLAS (tried ", tried, "): ", reason,
                  ". Put the CUDA toolkit's library folder on LD_LIBRARY_PATH");
  CublasLibrary blas{};
  Resolve(library, CORTADO_SYMBOL_NAME(cublasCreate), path, &blas.create);
  Resolve(library, CORTADO_SYMBOL_NAME(cublasDestroy), path, &blas.destroy);
  Resolve(library, CORTADO_SYMBOL_NAME(cublasSetStream), path, &blas.set_stream);
  Resolve(library, CORTADO_SYMBOL_NAME(cublasSetWorkspace), path, &blas.set_workspace);
  Resolve(library, CORTADO_SYMBOL_NAME(cublasSetPointerMode), path, &blas.set_pointer_mode);
  Resolve(library, CORTADO_SYMBOL_NAME(cublasSetMathMode), path, &blas.set_math_mode);
  Resolve(library, CORTADO_SYMBOL_NAME(cublasSgemm), path, &blas.sgemm);
  Resolve(library, CORTADO_SYMBOL_NAME(cublasGemmEx), path, &blas.gemm_ex);
  Resolve(library, CORTADO_SYMBOL_NAME(cublasSgemv), path, &blas.sgemv);
  Resolve(library, CORTADO_SYMBOL_NAME(cublasSaxpy), path, &blas.saxpy);
  Resolve(library, CORTADO_SYMBOL_NAME(cublasSdot), path, &blas.sdot);
  Resolve(library, CORTADO_SYMBOL_NAME(cublasSasum), path, &blas.sasum);
  Resolve(library, CORTADO_SYMBOL_NAME(cublasSnrm2), path, &blas.snrm2);
  return blas;  // the library stays open for the process's life
}

}  // namespace

const CublasLibrary& Cublas() {
  static const CublasLibrary library = Open();  // a failed open throws, and the next call tries again
  return library;
}

}  // namespace cortado::cuda
