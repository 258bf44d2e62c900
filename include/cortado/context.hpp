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

// How a GPU context computes; the solver fields strict_fp32, deterministic and
// cudnn_workspace_limit_mb (and the trainer flags of the same names) set them.
struct GpuSettings {
  bool strict_fp32 = false;    // no TF32 tensor cores, even where the GPU has them
  bool deterministic = false;  // cuDNN algorithms that give the same bits every run, where one fits
  size_t cudnn_workspace_limit = size_t{1} << 30;  // bytes one convolution's algorithms may use
};

const char* DeviceName(Device device);

class Context {
 public:
  // seed < 0 draws a seed from the clock, as Caffe does for random_seed: -1. A GPU context selects
  // GPU `gpu_id` and creates its streams and handles; it throws Error when there is no such GPU (or
  // no CUDA in this build).
  explicit Context(Device device = Device::kCPU, int64_t seed = -1, int gpu_id = 0);
  // A context for planning memory only (trainer --plan_only): nets may be built and planned on it,
  // never run. A GPU planning context touches no GPU, so a machine without one can plan for one.
  struct PlanOnly {};
  Context(Device device, PlanOnly);
  bool plan_only() const { return plan_only_; }
  ~Context();

  Device device() const { return device_; }
  int gpu_id() const { return gpu_id_; }
  // The GPU's streams and handles; null on a CPU context.
  GpuResources* gpu() const { return gpu_.get(); }
  // Waits for the GPU's queued work (nothing on the CPU).
  void Synchronize();

  // Set before the nets are built (cuDNN chooses its algorithms when layers are shaped); applies
  // cuBLAS's math mode at once.
  void SetGpuSettings(const GpuSettings& settings);
  const GpuSettings& gpu_settings() const { return gpu_settings_; }
  // Whether convolutions and inner products use TF32 tensor cores: a GPU of compute capability 8.0
  // or newer, without strict_fp32.
  bool tf32() const;

  // Data-parallel training (parallel.hpp): this context's rank among `ranks`. The solver sets it before
  // building its train net, whose data layers then read their rank's block of every batch.
  void SetDataParallelRank(int rank, int ranks) { rank_ = rank, ranks_ = ranks; }
  int rank() const { return rank_; }
  int ranks() const { return ranks_; }

  std::mt19937& rng() { return rng_; }
  void Reseed(int64_t seed);
  // The seed of the last Reseed (the one drawn, for a negative seed): reseeding with it draws the same.
  int64_t seed() const { return seed_; }
  // The generator's full state as text, so a resumed run draws the same numbers.
  std::string SaveRngState() const;
  void RestoreRngState(const std::string& state);
  // Throws, naming `source`, unless RestoreRngState would take `state`.
  static void CheckRngState(const std::string& state, const std::string& source);

  // Threads the CPU code may use (OpenMP; BLAS runs inside them); 0 keeps OMP_NUM_THREADS or the
  // number of cores.
  static void SetCpuThreads(int threads);
  static int CpuThreads();  // what the CPU code now uses

 private:
  Device device_;
  bool plan_only_ = false;
  int gpu_id_ = 0;
  std::shared_ptr<GpuResources> gpu_;
  GpuSettings gpu_settings_;
  int rank_ = 0, ranks_ = 1;
  std::mt19937 rng_;
  int64_t seed_ = 0;
};

}  // namespace cortado
