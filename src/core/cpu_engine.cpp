// cpu_engine.cpp — the CPU engine setting, what cpuid says the CPU can do, which kernels OpenBLAS
// chose, and the warning when those are older than the CPU.
#include "cortado/cpu_engine.hpp"

#include <cblas.h>
#include <cpuid.h>
#include <glog/logging.h>
#include <strings.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "cortado/error.hpp"

extern "C" char* openblas_get_corename(void);
extern "C" char* openblas_get_config(void);

namespace cortado {

namespace {

CpuEngine SettingFromEnvironment() {
  const char* value = std::getenv("CORTADO_CPU_ENGINE");
  if (value == nullptr || *value == '\0') return CpuEngine::kAuto;
  const CpuEngine engine = ParseCpuEngine(value, "CORTADO_CPU_ENGINE");
  CORTADO_REQUIRE(engine != CpuEngine::kOneDnn || BuiltWithOneDnn(),
                  "CORTADO_CPU_ENGINE=onednn, but this build of Cortado has no oneDNN (install libdnnl-dev "
                  "and rebuild)");
  return engine;
}

std::atomic<int>& Setting() {
  static std::atomic<int> setting{static_cast<int>(SettingFromEnvironment())};
  return setting;
}

// Vector instruction-set levels, oldest first.
enum IsaLevel { kSse = 0, kAvx = 1, kAvx2 = 2, kAvx512 = 3 };

struct CpuFeatures {
  bool sse42 = false, avx = false, fma = false, avx2 = false, avx512f = false, avx512bw = false,
       avx512vl = false, avx512_vnni = false, avx512_bf16 = false, avx_vnni = false, amx_tile = false,
       amx_bf16 = false;
  IsaLevel level() const { return avx512f ? kAvx512 : avx2 && fma ? kAvx2 : avx ? kAvx : kSse; }
};

CpuFeatures ReadCpuFeatures() {
  CpuFeatures f;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  f.sse42 = c & bit_SSE4_2;
  const bool osxsave = c & bit_OSXSAVE;
  // What the operating system saves on a context switch (XCR0): the vector registers' upper halves.
  uint64_t xcr0 = 0;
  if (osxsave) {
    uint32_t lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    xcr0 = (uint64_t{hi} << 32) | lo;
  }
  const bool ymm = (xcr0 & 0x6) == 0x6, zmm = ymm && (xcr0 & 0xe0) == 0xe0,
             tiles = (xcr0 & 0x60000) == 0x60000;
  f.avx = ymm && (c & bit_AVX);
  f.fma = ymm && (c & bit_FMA);
  if (__get_cpuid_max(0, nullptr) < 7) return f;
  __cpuid_count(7, 0, a, b, c, d);
  f.avx2 = ymm && (b & bit_AVX2);
  f.avx512f = zmm && (b & bit_AVX512F);
  f.avx512bw = zmm && (b & bit_AVX512BW);
  f.avx512vl = zmm && (b & bit_AVX512VL);
  f.avx512_vnni = zmm && (c & (1u << 11));
  f.amx_bf16 = tiles && (d & (1u << 22));
  f.amx_tile = tiles && (d & (1u << 24));
  __cpuid_count(7, 1, a, b, c, d);
  f.avx_vnni = ymm && (a & (1u << 4));
  f.avx512_bf16 = zmm && (a & (1u << 5));
  return f;
}

const CpuFeatures& Features() {
  static const CpuFeatures features = ReadCpuFeatures();
  return features;
}

// The instruction-set level of OpenBLAS's kernels, from its core name (DYNAMIC_ARCH builds name the
// kernels they chose at load time).
IsaLevel BlasLevel(const char* core) {
  for (const char* name : {"SkylakeX", "Cooperlake", "SapphireRapids"})
    if (strcasecmp(core, name) == 0) return kAvx512;
  for (const char* name : {"Haswell", "Zen"})
    if (strcasecmp(core, name) == 0) return kAvx2;
  for (const char* name : {"Sandybridge", "Bulldozer", "Piledriver", "Steamroller", "Excavator"})
    if (strcasecmp(core, name) == 0) return kAvx;
  return kSse;  // Prescott, Core2, Nehalem, generic, ...
}

const char* LevelName(IsaLevel level) {
  switch (level) {
    case kAvx512: return "AVX-512";
    case kAvx2: return "AVX2";
    case kAvx: return "AVX";
    default: return "SSE";
  }
}

}  // namespace

const char* CpuEngineName(CpuEngine engine) {
  switch (engine) {
    case CpuEngine::kIm2col: return "im2col";
    case CpuEngine::kOneDnn: return "onednn";
    default: return "auto";
  }
}

CpuEngine ParseCpuEngine(const std::string& name, const std::string& where) {
  for (CpuEngine engine : {CpuEngine::kAuto, CpuEngine::kIm2col, CpuEngine::kOneDnn})
    if (name == CpuEngineName(engine)) return engine;
  throw Error(where + ": unknown CPU engine '" + name + "' (valid: auto, im2col, onednn)");
}

CpuEngine CpuEngineSetting() { return static_cast<CpuEngine>(Setting().load()); }

void SetCpuEngine(CpuEngine engine) {
  CORTADO_REQUIRE(engine != CpuEngine::kOneDnn || BuiltWithOneDnn(),
                  "CPU engine onednn, but this build of Cortado has no oneDNN (install libdnnl-dev and rebuild)");
  Setting().store(static_cast<int>(engine));
}

bool OneDnnEnabled() { return BuiltWithOneDnn() && CpuEngineSetting() != CpuEngine::kIm2col; }

std::string CpuModel() {
  unsigned regs[12] = {};
  if (static_cast<unsigned>(__get_cpuid_max(0x80000000u, nullptr)) < 0x80000004u) return "unknown";
  for (unsigned leaf = 0; leaf < 3; ++leaf)
    __get_cpuid(0x80000002 + leaf, &regs[4 * leaf], &regs[4 * leaf + 1], &regs[4 * leaf + 2], &regs[4 * leaf + 3]);
  std::string name(reinterpret_cast<const char*>(regs), sizeof(regs));
  name = name.substr(0, name.find('\0'));
  const size_t begin = name.find_first_not_of(' '), end = name.find_last_not_of(' ');
  return begin == std::string::npos ? "unknown" : name.substr(begin, end - begin + 1);
}

std::string CpuInstructionSets() {
  const CpuFeatures& f = Features();
  std::string out;
  const auto add = [&out](bool has, const char* name) {
    if (!has) return;
    if (!out.empty()) out += ' ';
    out += name;
  };
  add(f.sse42, "sse4.2");
  add(f.avx, "avx");
  add(f.fma, "fma");
  add(f.avx2, "avx2");
  add(f.avx_vnni, "avx_vnni");
  add(f.avx512f, "avx512f");
  add(f.avx512bw, "avx512bw");
  add(f.avx512vl, "avx512vl");
  add(f.avx512_vnni, "avx512_vnni");
  add(f.avx512_bf16, "avx512_bf16");
  add(f.amx_tile, "amx_tile");
  add(f.amx_bf16, "amx_bf16");
  return out.empty() ? "none beyond SSE" : out;
}

std::string BlasKernels() {
  return std::string("OpenBLAS ") + openblas_get_corename() + " kernels (" + openblas_get_config() + ")";
}

bool WarnIfBlasKernelsAreSlow() {
  static std::atomic<bool> warned{false};
  const char* core = openblas_get_corename();
  const IsaLevel blas = BlasLevel(core), cpu = Features().level();
  if (blas >= cpu || cpu < kAvx2 || warned.exchange(true)) return false;
  const char* fix = cpu == kAvx512 ? "SkylakeX" : "Haswell";
  LOG(WARNING) << "OpenBLAS runs its " << core << " (" << LevelName(blas) << ") kernels on a CPU with "
               << LevelName(cpu) << ", at a fraction of the CPU's speed: set OPENBLAS_CORETYPE=" << fix
               << " for its " << LevelName(cpu) << " kernels. "
               << (OneDnnEnabled() ? "Meanwhile Cortado's matrix products use oneDNN's, which follow the CPU's "
                                     "instruction sets"
                                   : BuiltWithOneDnn() ? "Cortado's matrix products use OpenBLAS (CPU engine im2col)"
                                                       : "This build has no oneDNN (libdnnl-dev): Cortado's "
                                                         "matrix products use OpenBLAS");
  return true;
}

}  // namespace cortado
