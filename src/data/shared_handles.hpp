// shared_handles.hpp — one open handle per database in the process, shared by every reader of it.
// LMDB and LevelDB each let a process open a database once (LMDB's lock file, LevelDB's LOCK). A
// handle opens, and closes when its last user lets go, under one lock: a database never has two
// handles, not even while a reader opens it as the last one closes.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>

namespace cortado {

template <typename Key, typename Handle>
class SharedHandles {
 public:
  explicit SharedHandles(std::function<void(Handle*)> close) : close_(std::move(close)) {}

  // The open handle of `key`; else open()'s, kept for the next caller. open runs under the lock, and
  // may throw or return null (nothing is kept then).
  std::shared_ptr<Handle> Get(const Key& key, const std::function<Handle*()>& open) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = open_.find(key);
    if (it == open_.end()) {
      Handle* handle = open();
      if (handle == nullptr) return nullptr;
      it = open_.emplace(key, Entry{handle, 0}).first;
    }
    ++it->second.users;
    return std::shared_ptr<Handle>(it->second.handle, [this, key](Handle*) { Release(key); });
  }

 private:
  struct Entry {
    Handle* handle;
    int users;
  };

  void Release(const Key& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = open_.find(key);
    if (--it->second.users > 0) return;
    close_(it->second.handle);
    open_.erase(it);
  }

  const std::function<void(Handle*)> close_;
  std::mutex mutex_;
  std::map<Key, Entry> open_;
};

}  // namespace cortado
