// cpu_engine.hpp — how the CPU computes convolutions and matrix products, and what the CPU and its
// BLAS can do.
//
// Two engines: Cortado's own (im2col and OpenBLAS's SGEMM) and oneDNN's, whose code follows the
// instruction sets the CPU reports (AVX2, AVX-512, AVX-512 BF16, AMX) rather than a table of CPU
// models. The process-wide setting is CORTADO_CPU_ENGINE at start-up, or trainer --cpu_engine:
//   auto    (default) matrix products with oneDNN; each convolution shape timed at set-up with every
//           engine, the fastest kept (as cuDNN's Find does on the GPU)
//   onednn  oneDNN wherever it computes the layer, without timing (results the same every run)
//   im2col  no oneDNN at all: im2col and OpenBLAS, as a build without oneDNN
// A layer's prototxt `engine` (CAFFE: im2col, ONEDNN) overrides the setting for that layer.
#pragma once

#include <string>

namespace cortado {

enum class CpuEngine { kAuto, kIm2col, kOneDnn };

// Whether this build has oneDNN (libdnnl-dev at configure time).
bool BuiltWithOneDnn();

const char* CpuEngineName(CpuEngine engine);  // "auto", "im2col", "onednn"
// Parses a name above; throws Error naming `where` (a flag or variable) and the valid names.
CpuEngine ParseCpuEngine(const std::string& name, const std::string& where);

// The process's setting (CORTADO_CPU_ENGINE when first asked, "auto" when unset). Set it before nets
// are built: layers choose their engines when shaped. Forcing onednn in a build without it throws.
CpuEngine CpuEngineSetting();
void SetCpuEngine(CpuEngine engine);
// Whether oneDNN computes what it can: a build with it, not set to im2col.
bool OneDnnEnabled();

// The CPU's model as cpuid names it, e.g. "AMD EPYC 9R14 96-Core Processor".
std::string CpuModel();
// The CPU's vector instruction sets as cpuid reports them, e.g. "sse4.2 avx2 avx512f avx512_bf16".
std::string CpuInstructionSets();
// The BLAS kernels in use: OpenBLAS's core name (e.g. "Haswell") and its build configuration.
std::string BlasKernels();
// The instruction set oneDNN's code uses here, e.g. "AVX-512 with bfloat16" ("none" without oneDNN).
std::string OneDnnInstructionSet();
// Whether oneDNN runs bf16 arithmetic in hardware here (AVX-512 BF16 or AMX): mixed-precision nets
// then compute their bf16 convolutions with it (convolution.cpp).
bool OneDnnRunsBf16();
// Logs one warning when OpenBLAS chose kernels older than the CPU supports (generic or SSE kernels on an
// AVX2 or AVX-512 CPU): it names the fix (OPENBLAS_CORETYPE=...) and what Cortado does meanwhile.
// Once per process (later calls return false); returns whether it warned. A CPU net calls it when
// built, and trainer device_query.
bool WarnIfBlasKernelsAreSlow();

}  // namespace cortado
