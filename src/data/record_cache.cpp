// record_cache.cpp — CacheRecords: a RecordSource that keeps every record's bytes in memory once read
// (DataParameter cache), so that epochs after the first read no database. One atomic pointer per
// record: null until its first read publishes a copy, which is then never replaced or freed before
// the cache.
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "cortado/data/records.hpp"

namespace cortado {

namespace {

class CachedRecords final : public RecordSource {
 public:
  explicit CachedRecords(std::unique_ptr<RecordSource> source)
      : source_(std::move(source)), values_(source_->size()) {
    for (auto& value : values_) value.store(nullptr, std::memory_order_relaxed);
  }
  ~CachedRecords() override {
    for (auto& value : values_) delete value.load(std::memory_order_relaxed);
  }

  uint64_t size() const override { return source_->size(); }
  std::string_view key(uint64_t i) const override { return source_->key(i); }
  std::string_view value(uint64_t i) const override {
    const std::string* cached = values_[i].load(std::memory_order_acquire);
    if (cached == nullptr) {
      auto copy = std::make_unique<const std::string>(source_->value(i));
      // The first thread's copy is kept; a thread that loses the race drops its own and takes it.
      if (values_[i].compare_exchange_strong(cached, copy.get(), std::memory_order_acq_rel)) cached = copy.release();
    }
    return *cached;
  }
  const std::string& path() const override { return source_->path(); }
  const char* backend_name() const override { return source_->backend_name(); }

 private:
  std::unique_ptr<RecordSource> source_;
  mutable std::vector<std::atomic<const std::string*>> values_;  // record i's bytes once read, else null
};

}  // namespace

std::unique_ptr<RecordSource> CacheRecords(std::unique_ptr<RecordSource> source) {
  return std::make_unique<CachedRecords>(std::move(source));
}

}  // namespace cortado
