// lmdb_records.cpp — LmdbRecords: an LMDB opened read-only, checked against its file, and walked once
// under a fault guard; then random access to every record through views into the read transaction.
// The environment is shared by every LmdbRecords of the same file in the process (shared_handles.hpp).
#include <sys/stat.h>
#include <sys/sysmacros.h>  // major, minor

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <utility>

#include "cortado/data/lmdb.hpp"
#include "cortado/data/records.hpp"
#include "cortado/error.hpp"
#include "cortado/fault_guard.hpp"
#include "cortado/no_coverage.hpp"
#include "shared_handles.hpp"

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

  // Compares addresses, which follow the process's map rather than the input.
  CORTADO_NO_COVERAGE bool Inside(const MDB_val& v) const {
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

// The LMDB calls that open the database, run under RunFaultGuarded (no destructors here): LMDB
// trusts its meta pages and root page even before the walk.
struct OpenCalls {
  const char* path;
  MDB_env* env = nullptr;
  MDB_txn* txn = nullptr;
  MDB_cursor* cursor = nullptr;
  MDB_stat stat{};
  int rc = MDB_SUCCESS;

  static void Environment(void* self) {
    auto* o = static_cast<OpenCalls*>(self);
    o->rc = mdb_env_create(&o->env);
    if (o->rc == MDB_SUCCESS) o->rc = mdb_env_set_assert(o->env, OnLmdbAssert);
    if (o->rc == MDB_SUCCESS) o->rc = mdb_env_open(o->env, o->path, MDB_RDONLY | MDB_NOTLS, 0664);
  }
  static void Transaction(void* self) {
    auto* o = static_cast<OpenCalls*>(self);
    MDB_dbi dbi = 0;
    o->rc = mdb_txn_begin(o->env, nullptr, MDB_RDONLY, &o->txn);
    if (o->rc == MDB_SUCCESS) o->rc = mdb_dbi_open(o->txn, nullptr, 0, &dbi);
    if (o->rc == MDB_SUCCESS) o->rc = mdb_cursor_open(o->txn, dbi, &o->cursor);
    if (o->rc == MDB_SUCCESS) o->rc = mdb_stat(o->txn, dbi, &o->stat);
  }
};

// The open environments by data.mdb's device and inode. LMDB lets a process open a database once: a
// second mdb_env_open of it takes the lock file's exclusive lock again (fcntl locks are per process),
// resets the reader table and its transaction id, and a reader starting meanwhile reads the empty
// first meta page.
using FileId = std::pair<dev_t, ino_t>;
SharedHandles<FileId, MDB_env>& Environments() {
  static auto* environments = new SharedHandles<FileId, MDB_env>(mdb_env_close);
  return *environments;
}

// LMDB's two meta pages, as mdb_env_open reads them (64-bit layout: page flags at byte 10, P_META 8;
// then the meta: magic 0xBEEFC0DE at 16, version 1 at 20, the page size at 40; the second meta page
// starts one page in). mdb_env_open trusts the page size they give: 0 divides by zero. "" when both
// are sound, else what is wrong.
std::string CheckMetaPages(const std::string& data_path, uint64_t file_bytes) {
  std::ifstream in(data_path, std::ios::binary);
  uint32_t first_page = 0;
  for (int meta = 0; meta < 2; ++meta) {
    const uint64_t offset = meta == 0 ? 0 : first_page;
    char header[48] = {};
    if (offset + sizeof header > file_bytes) {
      if (meta == 0 && file_bytes == 0) return "";  // an empty file: LMDB's own error says more
      return "data.mdb holds " + std::to_string(file_bytes) + " bytes, too few for its meta page " +
             std::to_string(meta) + " (the file was cut short?)";
    }
    in.seekg(static_cast<std::streamoff>(offset));
    in.read(header, sizeof header);
    uint16_t flags = 0;
    uint32_t magic = 0, version = 0, page = 0;
    std::memcpy(&flags, header + 10, sizeof flags);
    std::memcpy(&magic, header + 16, sizeof magic);
    std::memcpy(&version, header + 20, sizeof version);
    std::memcpy(&page, header + 40, sizeof page);
    if (magic != 0xBEEFC0DE || (flags & 0x08) == 0) return "";  // not an LMDB: mdb_env_open says so
    if (version != 1) return "";
    if (page < 512 || page > 65536 || (page & (page - 1)) != 0 || (meta == 1 && page != first_page))
      return "its meta page " + std::to_string(meta) + " gives a page size of " + std::to_string(page) + " bytes";
    if (meta == 0) first_page = page;
  }
  return "";
}

// The address ranges where this process maps the first `bytes` bytes of `file` (LMDB keeps its map
// address to itself; every reader of the same database maps it once more), from /proc/self/maps,
// whose length follows the process's history rather than the input (CORTADO_NO_COVERAGE).
CORTADO_NO_COVERAGE std::vector<std::pair<const char*, const char*>> MappingsOf(const struct stat& file, uint64_t bytes) {
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
  const std::string data_path = path_ + "/data.mdb";
  struct stat file {};
  const bool have_file = ::stat(data_path.c_str(), &file) == 0 && S_ISREG(file.st_mode);
  if (have_file) {
    const std::string problem = CheckMetaPages(data_path, static_cast<uint64_t>(file.st_size));
    if (!problem.empty()) Corrupt(problem);
  }
  OpenCalls open{path_.c_str()};
  std::string fault;
  const auto open_environment = [&]() -> MDB_env* {
    fault = RunFaultGuarded(&OpenCalls::Environment, &open);
    if (fault.empty() && open.rc == MDB_SUCCESS) return open.env;
    if (open.env) mdb_env_close(open.env);
    return nullptr;
  };
  if (have_file) {
    env_ = Environments().Get({file.st_dev, file.st_ino}, open_environment);
  } else if (MDB_env* env = open_environment()) {
    env_.reset(env, mdb_env_close);  // refused below, after LMDB's own error had its chance
  }
  open.env = env_.get();
  if (!fault.empty()) Corrupt("opening it: " + fault);
  if (open.rc != MDB_SUCCESS) {
    const int rc = open.rc;
    Close();
    if (rc == ENOENT && std::filesystem::exists(path_ + "/CURRENT"))
      Fail(owner_, "cannot open LMDB '", path_, "': it holds a LevelDB (CURRENT), not an LMDB");
    if (rc == MDB_INVALID || rc == MDB_VERSION_MISMATCH) Corrupt(std::string("its header: ") + mdb_strerror(rc));
    Fail(owner_, "cannot open LMDB '", path_, "': ", mdb_strerror(rc));
  }

  // Every page the header counts must be in the file before LMDB may touch one through the map.
  CORTADO_REQUIRE(have_file, owner_, "cannot open LMDB '", path_, "': data.mdb is not a file");
  const uint64_t file_bytes = static_cast<uint64_t>(file.st_size);
  MDB_envinfo info{};
  mdb_env_info(env_.get(), &info);
  MDB_stat env_stat{};
  mdb_env_stat(env_.get(), &env_stat);
  const uint64_t page = env_stat.ms_psize;
  const uint64_t pages_bytes = (static_cast<uint64_t>(info.me_last_pgno) + 1) * page;
  if (info.me_last_pgno >= (uint64_t{1} << 48) || pages_bytes > file_bytes) {
    Close();
    Fail(owner_, "LMDB '", path_, "' is truncated: data.mdb holds ", file_bytes, " bytes but its header counts ",
         info.me_last_pgno + 1, " pages of ", page, " bytes (", pages_bytes,
         " bytes); the file was cut short (an interrupted copy or a full disk?)");
  }

  fault = RunFaultGuarded(&OpenCalls::Transaction, &open);
  txn_ = open.txn, cursor_ = open.cursor;
  if (!fault.empty()) Corrupt("opening it: " + fault);
  const MDB_stat stat = open.stat;
  if (open.rc != MDB_SUCCESS) {
    const int rc = open.rc;
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

  // Room for the records the header counts, up to 2^20: a damaged count reserves no more.
  const size_t room = static_cast<size_t>(std::min<uint64_t>(stat.ms_entries, 1 << 20));
  keys_.reserve(room);
  values_.reserve(room);
  const std::vector<std::pair<const char*, const char*>> mapped = MappingsOf(file, file_bytes);
  if (mapped.empty()) Corrupt("data.mdb is not mapped into memory where LMDB should have mapped it");
  Walk walk{cursor_, stat.ms_entries, &mapped, &keys_, &values_};
  fault = RunFaultGuarded(&Walk::Run, &walk);
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
  cursor_ = nullptr, txn_ = nullptr;
  env_.reset();
  keys_.clear();
  values_.clear();
}

void LmdbRecords::Corrupt(const std::string& what) {
  Close();
  Fail(owner_, "LMDB '", path_, "' is corrupt: ", what);
}

}  // namespace cortado
