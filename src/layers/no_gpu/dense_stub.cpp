// dense_stub.cpp — kernels/dense.hpp in a CPU-only build: every launcher is an Error saying the GPU
// path is missing (no GPU context can exist in such a build, so none is reached in practice), and
// there is no cuDNN.
#include "cortado/error.hpp"
#include "cortado/kernels/dense.hpp"

namespace cortado {

namespace {
[[noreturn]] void NoCuda() { Fail("this build of Cortado has no GPU support (rebuild with the CUDA toolkit)"); }
}  // namespace

void SoftmaxForwardGpu(Context&, int64_t, int64_t, int64_t, const float*, float*) { NoCuda(); }
void SoftmaxBackwardGpu(Context&, int64_t, int64_t, int64_t, const float*, const float*, float*) { NoCuda(); }

int64_t FirstBadLabelGpu(Context&, const float*, const float*, float*) { NoCuda(); }
int64_t SoftmaxLossForwardGpu(Context&, int64_t, int64_t, int64_t, const float*, const float*, bool, int, bool, double,
                              float*, float*, float*) {
  NoCuda();
}
void SoftmaxLossBackwardGpu(Context&, int64_t, int64_t, int64_t, const float*, const float*, bool, int, const float*,
                            const float*, float*) {
  NoCuda();
}

int64_t AccuracyForwardGpu(Context&, int64_t, int64_t, int64_t, int, bool, int, const float*, const float*, float*,
                           float*, float*, float*) {
  NoCuda();
}

void MaxPoolForwardGpu(Context&, const PoolShape&, const float*, float*, float*) { NoCuda(); }
void MaxPoolBackwardGpu(Context&, const PoolShape&, const float*, const float*, float*) { NoCuda(); }
void AvePoolForwardGpu(Context&, const PoolShape&, const float*, float*) { NoCuda(); }
void AvePoolBackwardGpu(Context&, const PoolShape&, const float*, float*) { NoCuda(); }
void StoPoolForwardTrainGpu(Context&, const PoolShape&, const uint64_t*, const float*, float*, float*) { NoCuda(); }
void StoPoolForwardTestGpu(Context&, const PoolShape&, const float*, float*, float*) { NoCuda(); }
void StoPoolBackwardTestGpu(Context&, const PoolShape&, const float*, const float*, const float*, const float*,
                            float*) {
  NoCuda();
}

void Im2ColGpu(Context&, const float*, const ConvGeometry&, float*) { NoCuda(); }
void Col2ImGpu(Context&, const float*, const ConvGeometry&, float*) { NoCuda(); }
void AddChannelBiasGpu(Context&, int64_t, int64_t, int64_t, const float*, float*) { NoCuda(); }

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
