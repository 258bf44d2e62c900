// context.hpp — what a layer needs from its surroundings, passed explicitly: the device it runs on
// and the random-number generator seeded from the solver's random_seed. No global singleton: two nets
// may run side by side with two contexts.
#pragma once

#include <cstdint>
#include <random>
#include <string>

namespace cortado {

enum class Device { kCPU, kGPU };

const char* DeviceName(Device device);

class Context {
 public:
  // seed < 0 draws a seed from the clock, as Caffe does for random_seed: -1.
  explicit Context(Device device = Device::kCPU, int64_t seed = -1);

  Device device() const { return device_; }
  int gpu_id() const { return gpu_id_; }
  void set_gpu_id(int id) { gpu_id_ = id; }

  std::mt19937& rng() { return rng_; }
  void Reseed(int64_t seed);
  // The generator's full state as text, so a resumed run draws the same numbers.
  std::string SaveRngState() const;
  void RestoreRngState(const std::string& state);

  // Threads the CPU code may use (OpenMP; BLAS runs inside them); 0 keeps OMP_NUM_THREADS or the
  // number of cores.
  static void SetCpuThreads(int threads);

 private:
  Device device_;
  int gpu_id_ = 0;
  std::mt19937 rng_;
};

}  // namespace cortado
