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

class MemoryPlan {
 public:
  explicit MemoryPlan(Device device = Device::kCPU) : device_(device) {}

  // A region of `floats` floats; `bind` receives its address once the arena exists.
  void Request(size_t floats, std::function<void(float*)> bind);
  // A blob's data, and its diff when with_diff is true.
  void RequestBlob(Blob* blob, bool with_diff);

  Device device() const { return device_; }
  size_t bytes() const;  // what the arena will hold, alignment included
  // Allocates the arena and binds every request. The plan may not be used afterwards.
  std::unique_ptr<Arena> Allocate();

 private:
  struct Region {
    size_t floats;
    std::function<void(float*)> bind;
  };
  Device device_;
  std::vector<Region> regions_;
};

// Convenience for tests and tools: binds a handful of blobs (data and diff) in one arena.
std::unique_ptr<Arena> AllocateBlobs(const std::vector<Blob*>& blobs, bool with_diff = true,
                                     Device device = Device::kCPU);

}  // namespace cortado
