// onednn_math.cpp — oneDNN's SGEMM behind cpu_gemm, and what oneDNN reports of the CPU.
#include <dnnl.h>
#include <glog/logging.h>

#include <cstdint>

#include "../onednn_math.hpp"
#include "cortado/cpu_engine.hpp"

namespace cortado {

bool BuiltWithOneDnn() { return true; }

std::string OneDnnInstructionSet() {
  switch (dnnl_get_effective_cpu_isa()) {
    case dnnl_cpu_isa_sse41: return "SSE4.1";
    case dnnl_cpu_isa_avx: return "AVX";
    case dnnl_cpu_isa_avx2: return "AVX2";
    case dnnl_cpu_isa_avx2_vnni: return "AVX2 with VNNI";
    case dnnl_cpu_isa_avx512_core: return "AVX-512";
    case dnnl_cpu_isa_avx512_core_vnni: return "AVX-512 with VNNI";
    case dnnl_cpu_isa_avx512_core_bf16: return "AVX-512 with bfloat16";
    case dnnl_cpu_isa_avx512_core_amx: return "AVX-512 with AMX";
    default: return "baseline";
  }
}

bool OneDnnRunsBf16() {
  const unsigned isa = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
  const unsigned bf16 = static_cast<unsigned>(dnnl_cpu_isa_avx512_core_bf16);  // ISA masks include the older ones
  return (isa & bf16) == bf16;
}

void OneDnnGemm(Trans trans_a, Trans trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                const float* b, int ldb, float beta, float* c, int ldc) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {  // no products: C = beta·C (which dnnl_sgemm refuses to compute)
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) c[int64_t{i} * ldc + j] = beta == 0.0f ? 0.0f : beta * c[int64_t{i} * ldc + j];
    return;
  }
  const dnnl_status_t status = dnnl_sgemm(trans_a == Trans::kYes ? 'T' : 'N', trans_b == Trans::kYes ? 'T' : 'N',
                                          m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  CHECK_EQ(status, dnnl_success) << "dnnl_sgemm(" << m << "×" << n << "×" << k << ") failed";
}

}  // namespace cortado
