// onednn_math.hpp — cpu_gemm's (math_cpu.cpp) use of oneDNN (onednn/onednn_math.cpp; a build without
// oneDNN links no_onednn/onednn_math_stub.cpp, never reached, since OneDnnEnabled() is false there).
// The layers' oneDNN primitives are src/layers/onednn_engine.hpp's.
#pragma once

#include "cortado/math.hpp"  // Trans

namespace cortado {

// C = alpha · op(A) · op(B) + beta · C (row-major, with leading dimensions), with oneDNN's SGEMM: its
// kernels follow the CPU's instruction sets. Inside an OpenMP parallel region it runs on the calling
// thread; outside, on the OpenMP threads.
void OneDnnGemm(Trans trans_a, Trans trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                const float* b, int ldb, float beta, float* c, int ldc);

}  // namespace cortado
