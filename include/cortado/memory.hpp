// memory.hpp — the memory plan and the arena.
//
// Setup happens in two phases. First every blob, parameter, gradient, solver history and scratch
// buffer is *requested* from a MemoryPlan (sizes only). Then the plan reserves one Arena for the
// device, in a single allocation, and hands each request its region. Nothing is allocated after that.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cortado/blob.hpp"
#include "cortado/context.hpp"

namespace cortado {

// One block of device memory, allocated once and zeroed, carved by a bump pointer.
class Arena {
 public:
  Arena(Device device, size_t bytes);
  ~Arena();
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  float* Take(size_t floats);  // 64-byte aligned; CHECKs that the plan fits
  Device device() const { return device_; }
  size_t bytes() const { return bytes_; }
  size_t used() const { return used_; }

 private:
  Device device_;
  size_t bytes_;
  size_t used_ = 0;
  char* base_ = nullptr;
};

// What a region holds, for the plan's summary.
enum class MemoryUse { kActivations, kGradients, kLayerBuffers, kWorkspace, kParameters, kSolverHistory, kOther };

class MemoryPlan {
 public:
  explicit MemoryPlan(Device device = Device::kCPU) : device_(device) {}

  // A region of `floats` floats of its own; `bind` receives its address once the arena exists.
  void Request(size_t floats, std::function<void(float*)> bind, MemoryUse use = MemoryUse::kOther);
  // A blob's data, and its diff when with_diff is true.
  void RequestBlob(Blob* blob, bool with_diff);

  // A region that several requesters use at different times (the train net between steps and the
  // test nets, which run between steps): as large as its largest request, and every request's bind
  // receives the same address.
  int AddSharedRegion();
  void RequestShared(int region, size_t floats, std::function<void(float*)> bind);
  // Records a buffer placed inside a shared request, for the summary's "without reuse" figures.
  void CountReused(MemoryUse use, size_t floats);

  Device device() const { return device_; }
  size_t bytes() const;  // what the arena will hold, alignment included
  // One line for the log: what the plan reserves, and the bytes by use without reuse.
  std::string Summary() const;
  // Allocates the arena and binds every request. The plan may not be used afterwards.
  std::unique_ptr<Arena> Allocate();

 private:
  struct Region {
    size_t floats;
    std::function<void(float*)> bind;
  };
  struct SharedRegion {
    size_t floats = 0;
    std::vector<std::function<void(float*)>> binds;
  };
  static constexpr int kUses = static_cast<int>(MemoryUse::kOther) + 1;
  Device device_;
  std::vector<Region> regions_;
  std::vector<SharedRegion> shared_;
  size_t own_bytes_[kUses] = {};     // regions of their own, by use
  size_t reused_bytes_[kUses] = {};  // buffers inside shared regions, by use, each counted whole
};

// Aligned bytes of a region of `floats` floats: every region starts on a 64-byte boundary.
size_t AlignedBytes(size_t floats);
// A human-readable size: "812 B", "3.4 MB", "1.21 GB" (powers of 1000, as the log's other figures).
std::string FormatBytes(size_t bytes);

// ---- packing buffers by lifetime -------------------------------------------------------------------
// A buffer in use during some spans of steps of a pass, each [first, last] inclusive (a layer's
// per-call buffer has two: its forward step and its backward step). No spans: never used, so it
// may overlap anything.
struct Lifetime {
  size_t floats = 0;
  std::vector<std::pair<int, int>> spans;
};
// Offsets (in floats, each aligned as AlignedBytes) that place the buffers in one region so that two
// buffers in use at a common step never overlap in memory; *total_floats receives the region's size.
// Greedy by size, best fit: the largest buffers are placed first, each in the smallest gap between
// the buffers already placed that are in use with it (as TensorFlow Lite's and MXNet's planners do).
std::vector<size_t> PackByLifetime(const std::vector<Lifetime>& buffers, size_t* total_floats);

// Convenience for tests and tools: binds a handful of blobs (data and diff) in one arena.
std::unique_ptr<Arena> AllocateBlobs(const std::vector<Blob*>& blobs, bool with_diff = true,
                                     Device device = Device::kCPU);

}  // namespace cortado
