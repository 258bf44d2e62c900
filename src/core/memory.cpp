// memory.cpp — the arena (one allocation per device) and the plan that carves it.
#include "cortado/memory.hpp"

#include <glog/logging.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <sstream>

#include "cortado/error.hpp"
#include "cortado/gpu.hpp"

namespace cortado {

namespace {
constexpr size_t kAlignment = 64;  // bytes: a cache line, and enough for vector loads
}  // namespace

size_t AlignedBytes(size_t floats) {
  const size_t bytes = floats * sizeof(float);
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

std::string FormatBytes(size_t bytes) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(bytes >= 10'000'000 ? 1 : 2);
  if (bytes >= 1'000'000'000) {
    out << bytes / 1e9 << " GB";
  } else if (bytes >= 1'000'000) {
    out << bytes / 1e6 << " MB";
  } else if (bytes >= 1'000) {
    out << bytes / 1e3 << " kB";
  } else {
    out.str("");
    out << bytes << " B";
  }
  return out.str();
}

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

void MemoryPlan::Request(size_t floats, std::function<void(float*)> bind, MemoryUse use) {
  regions_.push_back({floats, std::move(bind)});
  own_bytes_[static_cast<int>(use)] += AlignedBytes(floats);
}

void MemoryPlan::RequestBlob(Blob* blob, bool with_diff) {
  const int64_t n = blob->count();
  const Device device = device_;
  if (!with_diff) {
    Request(static_cast<size_t>(blob->data_floats()), [blob, device, n](float* data) { blob->Bind(device, data, nullptr, n); });
    return;
  }
  // Data and diff as two regions: the second bind completes the blob.
  auto data_slot = std::make_shared<float*>(nullptr);
  Request(static_cast<size_t>(blob->data_floats()), [data_slot](float* data) { *data_slot = data; });
  Request(static_cast<size_t>(blob->diff_floats()),
          [blob, device, n, data_slot](float* diff) { blob->Bind(device, *data_slot, diff, n); });
}

int MemoryPlan::AddSharedRegion() {
  shared_.emplace_back();
  return static_cast<int>(shared_.size()) - 1;
}

void MemoryPlan::RequestShared(int region, size_t floats, std::function<void(float*)> bind) {
  SharedRegion& r = shared_.at(region);
  r.floats = std::max(r.floats, floats);
  r.binds.push_back(std::move(bind));
}

void MemoryPlan::CountReused(MemoryUse use, size_t floats) {
  reused_bytes_[static_cast<int>(use)] += AlignedBytes(floats);
}

size_t MemoryPlan::bytes() const {
  size_t total = 0;
  for (const Region& r : regions_) total += AlignedBytes(r.floats);
  for (const SharedRegion& r : shared_) total += AlignedBytes(r.floats);
  return total;
}

std::string MemoryPlan::Summary() const {
  static const char* const kNames[kUses] = {"activations", "gradients", "layer buffers", "workspace",
                                            "parameters", "solver history", "other"};
  size_t without_reuse = 0, reused = 0, shared = 0;
  std::ostringstream uses;
  for (int u = 0; u < kUses; ++u) {
    const size_t bytes = own_bytes_[u] + reused_bytes_[u];
    without_reuse += bytes;
    reused += reused_bytes_[u];
    if (bytes > 0) uses << (uses.tellp() > 0 ? ", " : "") << kNames[u] << ' ' << FormatBytes(bytes);
  }
  for (const SharedRegion& r : shared_) shared += AlignedBytes(r.floats);
  std::ostringstream out;
  out << "Memory plan (" << DeviceName(device_) << "): " << FormatBytes(bytes()) << " reserved, "
      << FormatBytes(without_reuse) << " without reuse (" << uses.str() << ")";
  if (reused > 0) out << "; " << FormatBytes(reused) << " of buffers share " << FormatBytes(shared) << " by lifetime";
  return out.str();
}

std::unique_ptr<Arena> MemoryPlan::Allocate() {
  auto arena = std::make_unique<Arena>(device_, bytes());
  for (Region& r : regions_) {
    float* region = arena->Take(r.floats);
    r.bind(region);
  }
  for (SharedRegion& r : shared_) {
    float* region = arena->Take(r.floats);
    for (auto& bind : r.binds) bind(region);
  }
  regions_.clear();
  shared_.clear();
  return arena;
}

namespace {
bool InUseTogether(const Lifetime& a, const Lifetime& b) {
  for (const auto& [a_first, a_last] : a.spans)
    for (const auto& [b_first, b_last] : b.spans)
      if (a_first <= b_last && b_first <= a_last) return true;
  return false;
}
}  // namespace

std::vector<size_t> PackByLifetime(const std::vector<Lifetime>& buffers, size_t* total_floats) {
  const size_t unit = AlignedBytes(1) / sizeof(float);  // floats per alignment step
  auto span = [unit](size_t floats) { return (floats + unit - 1) / unit * unit; };
  std::vector<size_t> order(buffers.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return buffers[a].floats > buffers[b].floats; });
  std::vector<size_t> offsets(buffers.size(), 0);
  std::vector<size_t> placed;  // indices already given an offset
  size_t total = 0;
  for (size_t i : order) {
    const Lifetime& me = buffers[i];
    const size_t need = span(me.floats);
    if (me.spans.empty()) {  // never used: anywhere will do
      total = std::max(total, need);
      continue;
    }
    // The memory ranges of placed buffers in use with this one, by offset.
    std::vector<std::pair<size_t, size_t>> busy;
    for (size_t j : placed)
      if (InUseTogether(me, buffers[j])) busy.push_back({offsets[j], offsets[j] + span(buffers[j].floats)});
    std::sort(busy.begin(), busy.end());
    size_t best = SIZE_MAX, best_gap = SIZE_MAX, cursor = 0;
    for (const auto& [begin, end] : busy) {
      if (begin >= cursor + need && begin - cursor < best_gap) {
        best = cursor;
        best_gap = begin - cursor;
      }
      cursor = std::max(cursor, end);
    }
    offsets[i] = best != SIZE_MAX ? best : cursor;
    total = std::max(total, offsets[i] + need);
    placed.push_back(i);
  }
  *total_floats = total;
  return offsets;
}

std::unique_ptr<Arena> AllocateBlobs(const std::vector<Blob*>& blobs, bool with_diff,
                                     Device device) {
  MemoryPlan plan(device);
  for (Blob* blob : blobs) plan.RequestBlob(blob, with_diff);
  return plan.Allocate();
}

}  // namespace cortado
