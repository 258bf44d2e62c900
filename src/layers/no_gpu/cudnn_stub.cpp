// cudnn_stub.cpp — kernels/dense.hpp's cuDNN convolution in a CPU-only build: there is no cuDNN, and
// every call is an Error saying the GPU path is missing (no GPU context can exist in such a build, so
// none is reached in practice). The GPU launchers need no stubs (CORTADO_GPU_ONLY).
#include "cortado/error.hpp"
#include "cortado/kernels/dense.hpp"

namespace cortado {

namespace {
[[noreturn]] void NoCuda() { Fail("this build of Cortado has no GPU support (rebuild with the CUDA toolkit)"); }
}  // namespace

bool BuiltWithCudnn() { return false; }
CudnnConvolutionPtr CreateCudnnConvolution() { NoCuda(); }
size_t CudnnConvolutionReshape(Context&, CudnnConvolution&, int, int, int, const ConvGeometry&, size_t,
                               const std::string&) {
  NoCuda();
}
void CudnnConvolutionForward(Context&, const CudnnConvolution&, const float*, const float*, const float*, float*,
                             void*, size_t) {
  NoCuda();
}
void CudnnConvolutionBackward(Context&, const CudnnConvolution&, const float*, const float*, const float*, float*,
                              float*, float*, void*, size_t) {
  NoCuda();
}

}  // namespace cortado
