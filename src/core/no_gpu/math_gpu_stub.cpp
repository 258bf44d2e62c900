// math_gpu_stub.cpp — math_gpu.hpp in a CPU-only build: every call is an Error saying the GPU path
// is missing (no GPU context can exist in such a build, so none is reached in practice).
#include "cortado/error.hpp"
#include "cortado/math_gpu.hpp"

namespace cortado {

namespace {
[[noreturn]] void NoCuda() { Fail("this build of Cortado has no GPU support (rebuild with the CUDA toolkit)"); }
}  // namespace

void gpu_gemm(Context&, Trans, Trans, int, int, int, float, const float*, const float*, float, float*) { NoCuda(); }
void gpu_gemm_stored(Context&, Trans, Trans, int, int, int, float, DataType, const void*, const void*, float, DataType,
                     void*) {
  NoCuda();
}
void gpu_gemv(Context&, Trans, int, int, float, const float*, const float*, float, float*) { NoCuda(); }
void gpu_axpy(Context&, int64_t, float, const float*, float*) { NoCuda(); }
void gpu_axpby(Context&, int64_t, float, const float*, float, float*) { NoCuda(); }
void gpu_scale(Context&, int64_t, float, float*) { NoCuda(); }
void gpu_scale(Context&, int64_t, float, const float*, float*) { NoCuda(); }
void gpu_copy(Context&, int64_t, const float*, float*) { NoCuda(); }
void gpu_set(Context&, int64_t, float, float*) { NoCuda(); }
float gpu_dot(Context&, int64_t, const float*, const float*) { NoCuda(); }
void gpu_dot_accumulate(Context&, int64_t, const float*, const float*, float*) { NoCuda(); }
float gpu_asum(Context&, int64_t, const float*) { NoCuda(); }
double gpu_sumsq(Context&, int64_t, const float*) { NoCuda(); }
void gpu_add(Context&, int64_t, const float*, const float*, float*) { NoCuda(); }
void gpu_sub(Context&, int64_t, const float*, const float*, float*) { NoCuda(); }
void gpu_mul(Context&, int64_t, const float*, const float*, float*) { NoCuda(); }
void gpu_div(Context&, int64_t, const float*, const float*, float*) { NoCuda(); }
void gpu_add_scalar(Context&, int64_t, float, float*) { NoCuda(); }
void gpu_sign(Context&, int64_t, const float*, float*) { NoCuda(); }
bool gpu_all_finite(Context&, int64_t, const float*) { NoCuda(); }

}  // namespace cortado
