// leveldb_records.cpp — LeveldbRecords: a LevelDB's keys read once, in key order, under a snapshot;
// values fetched by index with thread-safe Gets into per-thread buffers. One open handle per path is
// shared in the process, since LevelDB's LOCK file lets a process open a database only once.
#include <leveldb/db.h>  // leveldb::DB, Options, ReadOptions, Iterator, Snapshot, Status

#include <filesystem>
#include <map>

#include "cortado/child_process.hpp"
#include "cortado/data.hpp"
#include "cortado/error.hpp"

namespace cortado {

namespace fs = std::filesystem;

// The shared database and the snapshot every reader of it reads under.
struct LeveldbRecords::Handle {
  leveldb::DB* db = nullptr;
  const leveldb::Snapshot* snapshot = nullptr;
  ~Handle() {
    if (snapshot) db->ReleaseSnapshot(snapshot);
    delete db;
  }
};

namespace {

// The open handles by canonical path. A handle is destroyed under the registry's lock, so a reader
// opening the same path again never meets a database that is still closing (and still LOCKed).
std::mutex& RegistryMutex() {
  static std::mutex mutex;
  return mutex;
}
std::map<std::string, std::weak_ptr<LeveldbRecords::Handle>>& Registry() {
  static auto* handles = new std::map<std::string, std::weak_ptr<LeveldbRecords::Handle>>;
  return *handles;
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

  std::lock_guard<std::mutex> lock(RegistryMutex());
  if (auto open = Registry()[id].lock()) return open;
  leveldb::Options options;
  options.create_if_missing = false;
  options.max_open_files = 100;  // Caffe's
  options.paranoid_checks = true;  // a damaged file is an error at open, not a crash later
  // LevelDB asserts on some damaged databases (a log file numbered 0 aborts its recovery): it opens
  // the database in a child process first, where such an abort is an Error naming the path. The child
  // ends without closing the database (a closing DB would wait for a compaction thread it lacks).
  RunInChildProcess(
      [&] {
        leveldb::DB* probe = nullptr;
        const leveldb::Status opened = leveldb::DB::Open(options, path, &probe);
        if (!opened.ok()) Fail(prefix, "cannot open LevelDB '", path, "': ", opened.ToString());
        return std::string();
      },
      prefix + "cannot open LevelDB '" + path + "': LevelDB crashed opening it (a damaged database?)");
  leveldb::DB* db = nullptr;
  const leveldb::Status s = leveldb::DB::Open(options, path, &db);
  if (!s.ok()) Fail(prefix, "cannot open LevelDB '", path, "': ", s.ToString());
  std::shared_ptr<LeveldbRecords::Handle> handle(new LeveldbRecords::Handle, [](LeveldbRecords::Handle* h) {
    std::lock_guard<std::mutex> closing(RegistryMutex());
    delete h;
  });
  handle->db = db;
  handle->snapshot = db->GetSnapshot();
  Registry()[id] = handle;
  return handle;
}

}  // namespace

LeveldbRecords::LeveldbRecords(const std::string& path, const std::string& owner)
    : path_(path), owner_(owner.empty() ? "" : owner + ": ") {
  handle_ = OpenShared(path, owner_);
  leveldb::ReadOptions read;
  read.snapshot = handle_->snapshot;
  read.fill_cache = false;
  read.verify_checksums = true;  // every block's CRC: damaged bytes are a Corruption status, never parsed
  offsets_.push_back(0);
  std::unique_ptr<leveldb::Iterator> it(handle_->db->NewIterator(read));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    keys_.append(it->key().data(), it->key().size());
    offsets_.push_back(keys_.size());
  }
  CORTADO_REQUIRE(it->status().ok(), owner_, "cannot read LevelDB '", path_, "': ", it->status().ToString());
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
