// cudnn_stub.cpp — convolution_gpu.hpp's cuDNN convolution in a build without cuDNN (CPU-only, or CUDA
// without cuDNN): BuiltWithCudnn() is false, so convolution.cpp picks the im2col engine, and a call
// that reaches the cuDNN engine anyway is an Error saying it is missing. The GPU launchers need no stubs
// (CORTADO_GPU_ONLY).
#include "../convolution_gpu.hpp"
#include "cortado/error.hpp"

namespace cortado {

namespace {
[[noreturn]] void NoCudnn() { Fail("this build of Cortado has no cuDNN (rebuild with cuDNN, or use engine: CAFFE)"); }
}  // namespace

bool BuiltWithCudnn() { return false; }
CudnnConvolutionPtr CreateCudnnConvolution() { NoCudnn(); }
size_t CudnnConvolutionReshape(Context&, CudnnConvolution&, int, int, int, const ConvGeometry&, DataType, bool,
                               size_t, const std::string&) {
  NoCudnn();
}
size_t CudnnConvolutionMeasure(Context&, CudnnConvolution&, const CudnnConvolutionBuffers&, const std::string&) {
  NoCudnn();
}
void CudnnConvolutionForward(Context&, const CudnnConvolution&, const void*, const void*, void*, void*, size_t) {
  NoCudnn();
}
void CudnnConvolutionBackward(Context&, const CudnnConvolution&, const void*, const void*, const void*, void*, bool,
                              void*, void*, size_t) {
  NoCudnn();
}

}  // namespace cortado
