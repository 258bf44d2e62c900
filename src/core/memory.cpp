// memory.cpp — the arena (one allocation per device) and the plan that carves it.
#include "cortado/memory.hpp"

#include <glog/logging.h>

#include <cstdlib>
#include <cstring>

#include "cortado/error.hpp"
#include "cortado/gpu.hpp"

namespace cortado {

namespace {
constexpr size_t kAlignment = 64;  // bytes: a cache line, and enough for vector loads
size_t AlignedBytes(size_t floats) {
  const size_t bytes = floats * sizeof(float);
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}
}  // namespace

Arena::Arena(Device device, size_t bytes) : device_(device), bytes_(bytes) {
  if (bytes_ == 0) return;
  if (device_ == Device::kGPU) {
    base_ = static_cast<char*>(GpuAllocate(bytes_));
  } else {
    base_ = static_cast<char*>(std::aligned_alloc(kAlignment, AlignedBytes((bytes_ + 3) / 4)));
    CORTADO_REQUIRE(base_ != nullptr, "out of host memory: could not reserve ", bytes_, " bytes");
    // Zeroed once: gradients nobody writes (a Split branch feeding Accuracy) must read as zero.
    std::memset(base_, 0, bytes_);
  }
}

Arena::~Arena() {
  if (base_ == nullptr) return;
  if (device_ == Device::kGPU) {
    GpuFree(base_);
  } else {
    std::free(base_);
  }
}

float* Arena::Take(size_t floats) {
  const size_t bytes = AlignedBytes(floats);
  CHECK_LE(used_ + bytes, bytes_) << "memory plan exceeded its arena";
  float* region = reinterpret_cast<float*>(base_ + used_);
  used_ += bytes;
  return region;
}

void MemoryPlan::Request(size_t floats, std::function<void(float*)> bind) {
  regions_.push_back({floats, std::move(bind)});
}

void MemoryPlan::RequestBlob(Blob* blob, bool with_diff) {
  const size_t n = static_cast<size_t>(blob->count());
  const Device device = device_;
  if (!with_diff) {
    Request(n, [blob, device, n](float* data) { blob->Bind(device, data, nullptr, n); });
    return;
  }
  // Data and diff as two regions: the second bind completes the blob.
  auto data_slot = std::make_shared<float*>(nullptr);
  Request(n, [data_slot](float* data) { *data_slot = data; });
  Request(n, [blob, device, n, data_slot](float* diff) { blob->Bind(device, *data_slot, diff, n); });
}

size_t MemoryPlan::bytes() const {
  size_t total = 0;
  for (const Region& r : regions_) total += AlignedBytes(r.floats);
  return total;
}

std::unique_ptr<Arena> MemoryPlan::Allocate() {
  auto arena = std::make_unique<Arena>(device_, bytes());
  for (Region& r : regions_) {
    float* region = arena->Take(r.floats);
    r.bind(region);
  }
  regions_.clear();
  return arena;
}

std::unique_ptr<Arena> AllocateBlobs(const std::vector<Blob*>& blobs, bool with_diff,
                                     Device device) {
  MemoryPlan plan(device);
  for (Blob* blob : blobs) plan.RequestBlob(blob, with_diff);
  return plan.Allocate();
}

}  // namespace cortado
