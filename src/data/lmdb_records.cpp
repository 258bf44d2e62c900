// lmdb_records.cpp — LmdbRecords: an LMDB opened read-only, checked against its file, and walked once
// under a fault guard; then random access to every record through views into the read transaction.
#include <sys/stat.h>
#include <sys/sysmacros.h>  // major, minor

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <utility>

#include "cortado/data.hpp"
#include "cortado/error.hpp"
#include "cortado/fault_guard.hpp"

namespace cortado {

namespace {

// LMDB calls this, then abort(), when one of its assertions fails: inside a guarded walk the walk ends
// instead (see Walk).
void OnLmdbAssert(MDB_env*, const char* message) {
  char text[256];  // no heap: the jump out of here skips every destructor
  std::snprintf(text, sizeof text, "LMDB's check failed: %s", message);
  FaultGuardAbort(text);
}

// The walk's inputs and outputs. It runs under RunFaultGuarded and is left by siglongjmp on a fault,
// so it holds nothing that needs a destructor; `found` tells how far it got.
struct Walk {
  MDB_cursor* cursor;
  uint64_t expected;  // the records the database's header counts
  const std::vector<std::pair<const char*, const char*>>* file;  // where data.mdb is mapped, [begin, end)
  std::vector<std::string_view>* keys;
  std::vector<std::string_view>* values;
  uint64_t found = 0;
  int rc = MDB_SUCCESS;
  const char* problem = nullptr;  // a record that fails a check, at index `found`

  static void Run(void* self) { static_cast<Walk*>(self)->Records(); }

  bool Inside(const MDB_val& v) const {
    const char* p = static_cast<const char*>(v.mv_data);
    for (const auto& [begin, end] : *file)
      if (p >= begin && p <= end && v.mv_size <= static_cast<size_t>(end - p)) return true;
    return false;
  }

  void Records() {
    MDB_val key{}, value{};
    for (; found < expected; ++found) {
      rc = mdb_cursor_get(cursor, &key, &value, found == 0 ? MDB_FIRST : MDB_NEXT);
      if (rc != MDB_SUCCESS) return;
      if (!Inside(key) || !Inside(value)) {
        problem = "points outside data.mdb";
        return;
      }
      const std::string_view k(static_cast<const char*>(key.mv_data), key.mv_size);
      if (found > 0 && !(keys->back() < k)) {
        problem = "is out of key order";
        return;
      }
      keys->push_back(k);
      values->push_back(std::string_view(static_cast<const char*>(value.mv_data), value.mv_size));
    }
  }
};

// The address ranges where this process maps the first `bytes` bytes of `file` (LMDB keeps its map
// address to itself; every reader of the same database maps it once more), from /proc/self/maps.
std::vector<std::pair<const char*, const char*>> MappingsOf(const struct stat& file, uint64_t bytes) {
  std::vector<std::pair<const char*, const char*>> ranges;
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    unsigned long begin = 0, end = 0, offset = 0, inode = 0;
    unsigned int major_id = 0, minor_id = 0;
    char perms[8] = {};
    if (std::sscanf(line.c_str(), "%lx-%lx %7s %lx %x:%x %lu", &begin, &end, perms, &offset, &major_id, &minor_id,
                    &inode) != 7)
      continue;
    if (offset != 0 || inode != file.st_ino || major_id != major(file.st_dev) || minor_id != minor(file.st_dev))
      continue;
    const auto* start = reinterpret_cast<const char*>(begin);
    ranges.emplace_back(start, start + std::min<uint64_t>(bytes, end - begin));
  }
  return ranges;
}

}  // namespace

LmdbRecords::LmdbRecords(const std::string& path, const std::string& owner)
    : path_(path), owner_(owner.empty() ? "" : owner + ": ") {
  MDB_dbi dbi = 0;
  MDB_stat stat{};
  int rc = mdb_env_create(&env_);
  if (rc == MDB_SUCCESS) rc = mdb_env_set_assert(env_, OnLmdbAssert);
  if (rc == MDB_SUCCESS) rc = mdb_env_open(env_, path.c_str(), MDB_RDONLY | MDB_NOTLS, 0664);
  if (rc != MDB_SUCCESS) {
    Close();
    if (rc == ENOENT && std::filesystem::exists(path_ + "/CURRENT"))
      Fail(owner_, "cannot open LMDB '", path_, "': it holds a LevelDB (CURRENT), not an LMDB");
    if (rc == MDB_INVALID || rc == MDB_VERSION_MISMATCH) Corrupt(std::string("its header: ") + mdb_strerror(rc));
    Fail(owner_, "cannot open LMDB '", path_, "': ", mdb_strerror(rc));
  }

  // Every page the header counts must be in the file before LMDB may touch one through the map.
  struct stat file {};
  CORTADO_REQUIRE(::stat((path_ + "/data.mdb").c_str(), &file) == 0, owner_, "cannot open LMDB '", path_,
                  "': cannot stat data.mdb: ", std::strerror(errno));
  const uint64_t file_bytes = static_cast<uint64_t>(file.st_size);
  MDB_envinfo info{};
  mdb_env_info(env_, &info);
  MDB_stat env_stat{};
  mdb_env_stat(env_, &env_stat);
  const uint64_t page = env_stat.ms_psize;
  if (page < 512 || page > 65536 || (page & (page - 1)) != 0)
    Corrupt("its header gives a page size of " + std::to_string(page) + " bytes");
  const uint64_t pages_bytes = (static_cast<uint64_t>(info.me_last_pgno) + 1) * page;
  if (info.me_last_pgno >= (uint64_t{1} << 48) || pages_bytes > file_bytes) {
    Close();
    Fail(owner_, "LMDB '", path_, "' is truncated: data.mdb holds ", file_bytes, " bytes but its header counts ",
         info.me_last_pgno + 1, " pages of ", page, " bytes (", pages_bytes,
         " bytes); the file was cut short (an interrupted copy or a full disk?)");
  }

  rc = mdb_txn_begin(env_, nullptr, MDB_RDONLY, &txn_);
  if (rc == MDB_SUCCESS) rc = mdb_dbi_open(txn_, nullptr, 0, &dbi);
  if (rc == MDB_SUCCESS) rc = mdb_cursor_open(txn_, dbi, &cursor_);
  if (rc == MDB_SUCCESS) rc = mdb_stat(txn_, dbi, &stat);
  if (rc != MDB_SUCCESS) {
    if (rc == MDB_CORRUPTED || rc == MDB_PAGE_NOTFOUND || rc == MDB_INCOMPATIBLE) Corrupt(mdb_strerror(rc));
    Close();
    Fail(owner_, "cannot read LMDB '", path_, "': ", mdb_strerror(rc));
  }
  if (stat.ms_entries == 0) {
    Close();
    Fail(owner_, "LMDB '", path_, "' holds no records");
  }
  // Each record takes at least a node header and a pointer (10 bytes) of some page.
  if (stat.ms_entries > file_bytes / 10)
    Corrupt("its header counts " + std::to_string(stat.ms_entries) + " records, more than its " +
            std::to_string(file_bytes) + " bytes can hold");

  keys_.reserve(stat.ms_entries);
  values_.reserve(stat.ms_entries);
  const std::vector<std::pair<const char*, const char*>> mapped = MappingsOf(file, file_bytes);
  if (mapped.empty()) Corrupt("data.mdb is not mapped into memory where LMDB should have mapped it");
  Walk walk{cursor_, stat.ms_entries, &mapped, &keys_, &values_};
  const std::string fault = RunFaultGuarded(&Walk::Run, &walk);
  const std::string record = "record " + std::to_string(walk.found) +
                             (walk.found > 0 ? " (after key '" + PrintableKey(keys_.back()) + "')" : "");
  if (!fault.empty()) Corrupt("reading " + record + ": " + fault);
  if (walk.problem != nullptr) Corrupt(record + " " + walk.problem);
  if (walk.rc == MDB_NOTFOUND)
    Corrupt("its header counts " + std::to_string(stat.ms_entries) + " records but only " +
            std::to_string(walk.found) + " were found");
  if (walk.rc != MDB_SUCCESS) Corrupt("reading " + record + ": " + mdb_strerror(walk.rc));
}

LmdbRecords::~LmdbRecords() { Close(); }

void LmdbRecords::Close() {
  if (cursor_) mdb_cursor_close(cursor_);
  if (txn_) mdb_txn_abort(txn_);
  if (env_) mdb_env_close(env_);
  cursor_ = nullptr, txn_ = nullptr, env_ = nullptr;
  keys_.clear();
  values_.clear();
}

void LmdbRecords::Corrupt(const std::string& what) {
  Close();
  Fail(owner_, "LMDB '", path_, "' is corrupt: ", what);
}

}  // namespace cortado
