// context.hpp — what a layer needs from its surroundings, passed explicitly: the device it runs on
// (and, on a GPU, its streams and library handles) and the random-number generator seeded from the
// solver's random_seed. No global singleton: two nets may run side by side with two contexts.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>

namespace cortado {

enum class Device { kCPU, kGPU };

struct GpuResources;  // streams and cuBLAS/cuDNN handles (cortado/cuda/resources.hpp)

const char* DeviceName(Device device);

class Context {
 public:
  // seed < 0 draws a seed from the clock, as Caffe does for random_seed: -1. A GPU context selects
  // GPU `gpu_id` and creates its streams and handles; it throws Error when there is no such GPU (or
  // no CUDA in this build).
  explicit Context(Device device = Device::kCPU, int64_t seed = -1, int gpu_id = 0);
  ~Context();

  Device device() const { return device_; }
  int gpu_id() const { return gpu_id_; }
  // The GPU's streams and handles; null on a CPU context.
  GpuResources* gpu() const { return gpu_.get(); }
  // Waits for the GPU's queued work (nothing on the CPU).
  void Synchronize();

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
  std::shared_ptr<GpuResources> gpu_;
  std::mt19937 rng_;
};

}  // namespace cortado
