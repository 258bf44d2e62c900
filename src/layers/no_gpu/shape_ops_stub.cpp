// shape_ops_stub.cpp — kernels/shape_ops.hpp in a CPU-only build: every launcher is an Error saying
// the GPU path is missing (no GPU context can exist in such a build, so none is reached in practice).
#include "cortado/error.hpp"
#include "cortado/kernels/shape_ops.hpp"

namespace cortado {

namespace {
[[noreturn]] void NoCuda() { Fail("this build of Cortado has no GPU support (rebuild with the CUDA toolkit)"); }
}  // namespace

void CropCopyGpu(Context&, int, const int*, const int*, const int*, const float*, float*, bool) { NoCuda(); }
void TileForwardGpu(Context&, int64_t, int64_t, int, const float*, float*) { NoCuda(); }
void TileBackwardGpu(Context&, int64_t, int64_t, int, const float*, float*) { NoCuda(); }
void ReductionForwardGpu(Context&, int, int64_t, int64_t, float, const float*, float*) { NoCuda(); }
void ReductionBackwardGpu(Context&, int, int64_t, int64_t, float, const float*, const float*, float*) { NoCuda(); }
void ArgMaxForwardGpu(Context&, int64_t, int, int64_t, int, bool, bool, const float*, float*) { NoCuda(); }

}  // namespace cortado
