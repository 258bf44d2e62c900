// leveldb_records.cpp — LeveldbRecords: a LevelDB's keys read once, in key order, by a child process
// under a memory limit; values fetched by index under a snapshot with thread-safe Gets into
// per-thread buffers. One open handle per path is shared in the process (shared_handles.hpp), since
// LevelDB's LOCK file lets a process open a database only once.
#include <leveldb/db.h>  // leveldb::DB, Options, ReadOptions, Iterator, Snapshot, Status
#include <leveldb/env.h>  // leveldb::Env, EnvWrapper, Logger

#include <glog/logging.h>  // CHECK_LE

#include <cstdarg>
#include <cstring>
#include <filesystem>
#include <memory>
#include <tuple>
#include <utility>

#include "cortado/child_process.hpp"
#include "cortado/data/leveldb.hpp"
#include "cortado/data/records.hpp"
#include "cortado/error.hpp"
#include "shared_handles.hpp"

namespace cortado {

namespace fs = std::filesystem;

// The shared database and the snapshot every reader of it reads under.
struct LeveldbRecords::Handle {
  leveldb::DB* db = nullptr;
  const leveldb::Snapshot* snapshot = nullptr;
  std::pair<std::string, std::vector<uint64_t>> keys_and_offsets;  // as LeveldbRecords' keys_, offsets_
  ~Handle() {
    if (snapshot) db->ReleaseSnapshot(snapshot);
    delete db;
  }
};

namespace {

// The open handles by canonical path (shared_handles.hpp).
SharedHandles<std::string, LeveldbRecords::Handle>& Handles() {
  static auto* handles = new SharedHandles<std::string, LeveldbRecords::Handle>([](LeveldbRecords::Handle* h) { delete h; });
  return *handles;
}

// The bytes of the files directly in a folder (a LevelDB keeps no subfolders).
size_t FolderBytes(const std::string& path) {
  size_t bytes = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(path, ec)) {
    const uintmax_t size = entry.is_regular_file(ec) ? entry.file_size(ec) : 0;
    if (!ec) bytes += static_cast<size_t>(size);
  }
  return bytes;
}

// Every key of the database in key order, each as its length (4 bytes) and its bytes; every block's
// checksum verified, so damaged bytes are a Corruption status, never parsed.
std::string ReadKeys(leveldb::DB* db, const std::string& path, const std::string& prefix) {
  leveldb::ReadOptions read;
  read.fill_cache = false;
  read.verify_checksums = true;
  std::string packed;
  std::unique_ptr<leveldb::Iterator> it(db->NewIterator(read));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    const uint32_t size = static_cast<uint32_t>(it->key().size());
    packed.append(reinterpret_cast<const char*>(&size), sizeof size);
    packed.append(it->key().data(), size);
  }
  CORTADO_REQUIRE(it->status().ok(), prefix, "cannot read LevelDB '", path, "': ", it->status().ToString());
  return packed;
}

// ReadKeys' answer as the keys concatenated and where each starts (the last offset ends the last key).
std::pair<std::string, std::vector<uint64_t>> UnpackKeys(const std::string& packed) {
  std::pair<std::string, std::vector<uint64_t>> unpacked;
  auto& [keys, offsets] = unpacked;
  keys.reserve(packed.size());
  offsets.push_back(0);
  for (size_t at = 0; at + sizeof(uint32_t) <= packed.size();) {
    uint32_t size = 0;
    std::memcpy(&size, packed.data() + at, sizeof size);
    at += sizeof size;
    CHECK_LE(size, packed.size() - at) << "LevelDB keys cut short";  // our own child's answer
    keys.append(packed, at, size);
    at += size;
    offsets.push_back(keys.size());
  }
  return unpacked;
}

// What the child that reads the keys gives LevelDB in place of its defaults. The child is forked while
// other threads of this process run (data loaders, glog), and inherits every lock one of them held at
// that moment, locked for ever: so its LevelDB writes no LOG file (a log line's time is formatted by
// localtime_r, under libc's time-zone lock, which a thread writing a glog line holds) and schedules no
// background compaction (the process-wide Env's queue lock, and a thread the child does not have).
// The child ends as soon as it has the keys, so it never needs either.
class SilentLogger : public leveldb::Logger {
 public:
  void Logv(const char* /*format*/, va_list /*arguments*/) override {}
};
class NoBackgroundWorkEnv : public leveldb::EnvWrapper {
 public:
  NoBackgroundWorkEnv() : EnvWrapper(leveldb::Env::Default()) {}
  void Schedule(void (*/*function*/)(void*), void* /*argument*/) override {}
  void StartThread(void (*/*function*/)(void*), void* /*argument*/) override {}
};

// A new handle of the LevelDB at `path` (checked by OpenShared), its keys read.
LeveldbRecords::Handle* OpenHandle(const std::string& path, const std::string& prefix) {
  leveldb::Options options;
  options.create_if_missing = false;
  options.max_open_files = 100;  // Caffe's
  options.paranoid_checks = true;  // a damaged file is an error at open, not a crash later
  // LevelDB trusts its files: it asserts on some damaged databases (a log file numbered 0 aborts its
  // recovery) and allocates whatever size a damaged block handle claims before reading the block. So
  // the database is first opened and every key read (which reads every table's index and data
  // blocks, values too) in a child process under a memory limit of 256 MiB plus the folder's size:
  // such an abort or allocation is an Error naming the path, and the parent, which takes the keys
  // from the child, only ever reads blocks the child read. The child ends without closing the
  // database (a closing DB would wait for a compaction thread it lacks).
  ChildMemory memory;
  memory.budget_bytes = (size_t{256} << 20) + FolderBytes(path);
  memory.exceeded_message = prefix + "cannot read LevelDB '" + path + "': reading its keys took more than the " +
                            std::to_string(memory.budget_bytes >> 20) + " MiB it can need (a damaged database?)";
  const std::string keys = RunInChildProcess(
      [&] {
        static SilentLogger silent;  // the child's own: created after the fork, never destroyed
        static NoBackgroundWorkEnv no_background_work;
        leveldb::Options child_options = options;
        child_options.info_log = &silent;
        child_options.env = &no_background_work;
        leveldb::DB* probe = nullptr;
        const leveldb::Status opened = leveldb::DB::Open(child_options, path, &probe);
        if (!opened.ok()) Fail(prefix, "cannot open LevelDB '", path, "': ", opened.ToString());
        return ReadKeys(probe, path, prefix);
      },
      prefix + "cannot open LevelDB '" + path + "': LevelDB crashed opening it (a damaged database?)", memory);
  leveldb::DB* db = nullptr;
  const leveldb::Status s = leveldb::DB::Open(options, path, &db);
  if (!s.ok()) Fail(prefix, "cannot open LevelDB '", path, "': ", s.ToString());
  auto handle = std::make_unique<LeveldbRecords::Handle>();
  handle->db = db;
  handle->snapshot = db->GetSnapshot();
  handle->keys_and_offsets = UnpackKeys(keys);
  return handle.release();
}

std::shared_ptr<LeveldbRecords::Handle> OpenShared(const std::string& path, const std::string& prefix) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (!fs::exists(status)) Fail(prefix, "cannot open LevelDB '", path, "': No such file or directory");
  if (!fs::is_directory(status)) Fail(prefix, "cannot open LevelDB '", path, "': Not a directory");
  // LevelDB would create its LOCK and LOG files in an LMDB's directory before failing: say what it is.
  if (fs::exists(path + "/data.mdb") && !fs::exists(path + "/CURRENT"))
    Fail(prefix, "cannot open LevelDB '", path, "': it holds an LMDB (data.mdb), not a LevelDB");
  // Nor into any other folder without a database: LevelDB writes LOCK and LOG before it looks.
  if (!fs::exists(path + "/CURRENT"))
    Fail(prefix, "cannot open LevelDB '", path, "': it holds no LevelDB (no CURRENT file)");
  const std::string canonical = fs::canonical(path, ec).string();
  const std::string id = ec ? path : canonical;

  return Handles().Get(id, [&] { return OpenHandle(path, prefix); });
}

}  // namespace

LeveldbRecords::LeveldbRecords(const std::string& path, const std::string& owner)
    : path_(path), owner_(owner.empty() ? "" : owner + ": ") {
  handle_ = OpenShared(path, owner_);
  std::tie(keys_, offsets_) = handle_->keys_and_offsets;
  CORTADO_REQUIRE(size() > 0, owner_, "LevelDB '", path_, "' holds no records");
}

LeveldbRecords::~LeveldbRecords() = default;

std::string* LeveldbRecords::Buffer() const {
  std::lock_guard<std::mutex> lock(buffers_mutex_);
  return &buffers_[std::this_thread::get_id()];
}

std::string_view LeveldbRecords::value(uint64_t i) const {
  std::string* buffer = Buffer();
  leveldb::ReadOptions read;
  read.snapshot = handle_->snapshot;
  read.verify_checksums = true;
  const std::string_view k = key(i);
  const leveldb::Status s = handle_->db->Get(read, leveldb::Slice(k.data(), k.size()), buffer);
  CORTADO_REQUIRE(s.ok(), owner_, "reading record '", PrintableKey(k), "' of LevelDB '", path_, "' failed: ",
                  s.ToString());
  return *buffer;
}

}  // namespace cortado
