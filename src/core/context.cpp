// context.cpp — device choice (and a GPU's resources), the seeded RNG and its saved state.
#include "cortado/context.hpp"

#include <omp.h>

#include <chrono>
#include <sstream>

#include "cortado/error.hpp"
#include "cortado/gpu.hpp"

namespace cortado {

const char* DeviceName(Device device) { return device == Device::kGPU ? "GPU" : "CPU"; }

Context::Context(Device device, int64_t seed, int gpu_id) : device_(device), gpu_id_(gpu_id) {
  if (device_ == Device::kGPU) {
    gpu_ = CreateGpuResources(gpu_id);
    SetGpuSettings(gpu_settings_);
  }
  Reseed(seed);
}

Context::Context(Device device, PlanOnly) : device_(device), plan_only_(true) { Reseed(0); }

Context::~Context() = default;

void Context::Synchronize() {
  if (gpu_) GpuSynchronize(*gpu_);
}

void Context::SetGpuSettings(const GpuSettings& settings) {
  gpu_settings_ = settings;
  if (gpu_) GpuSetTf32(*gpu_, tf32());
}

bool Context::tf32() const { return gpu_ != nullptr && !gpu_settings_.strict_fp32 && GpuHasTf32(*gpu_); }

void Context::Reseed(int64_t seed) {
  if (seed < 0) seed = std::chrono::steady_clock::now().time_since_epoch().count() & 0x7fffffff;
  seed_ = static_cast<std::mt19937::result_type>(seed);
  rng_.seed(seed_);
}

std::string Context::SaveRngState() const {
  std::ostringstream out;
  out << rng_;
  return out.str();
}

void Context::CheckRngState(const std::string& state, const std::string& source) {
  std::istringstream in(state);
  std::mt19937 engine;
  in >> engine;
  CORTADO_REQUIRE(!in.fail(), source, ": the saved random-number generator state is corrupt");
}

void Context::RestoreRngState(const std::string& state) {
  std::istringstream in(state);
  in >> rng_;
  CORTADO_REQUIRE(!in.fail(), "the saved random-number generator state is corrupt");
}

void Context::SetCpuThreads(int threads) {
  if (threads > 0) omp_set_num_threads(threads);
}

int Context::CpuThreads() { return omp_get_max_threads(); }

}  // namespace cortado
