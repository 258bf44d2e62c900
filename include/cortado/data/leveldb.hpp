// leveldb.hpp — the LevelDB backend (Caffe's default): LeveldbRecords reads one (a RecordSource),
// LeveldbWriter writes one (a DbWriter). A LevelDB "source" is a directory holding CURRENT,
// MANIFEST-*, *.ldb and LOCK. Only src/data/leveldb_*.cpp include leveldb/*.h; this header does not.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "cortado/data/db_writer.hpp"
#include "cortado/data/records.hpp"

namespace cortado {

// ---- reading -------------------------------------------------------------------------------------

// Every record of a LevelDB, in key order, with random access (src/data/leveldb_records.cpp). The keys
// are read once at open, under a snapshot, into memory; value(i) is a db->Get of key i under that
// snapshot into the calling thread's buffer (LevelDB's reads are thread-safe). LevelDB lets one
// process open a database once, so the open handle is shared by every LeveldbRecords of the same
// path (a train and a test net reading one database both work). Missing path: Error
// "<owner>: cannot open LevelDB '<path>': No such file or directory"; an LMDB's folder is refused as
// "... it holds an LMDB (data.mdb), not a LevelDB" before LevelDB could write its files into it.
class LeveldbRecords final : public RecordSource {
 public:
  LeveldbRecords(const std::string& path, const std::string& owner);
  ~LeveldbRecords() override;
  uint64_t size() const override { return offsets_.size() - 1; }
  std::string_view key(uint64_t i) const override {
    return std::string_view(keys_).substr(offsets_[i], offsets_[i + 1] - offsets_[i]);
  }
  std::string_view value(uint64_t i) const override;
  const std::string& path() const override { return path_; }
  const char* backend_name() const override { return "LevelDB"; }

  struct Handle;  // the shared leveldb::DB and its snapshot

 private:
  std::string* Buffer() const;  // the calling thread's value buffer

  std::string path_, owner_;
  std::shared_ptr<Handle> handle_;
  std::string keys_;               // every key, concatenated in key order
  std::vector<uint64_t> offsets_;  // key i is keys_[offsets_[i], offsets_[i + 1])
  mutable std::mutex buffers_mutex_;
  mutable std::unordered_map<std::thread::id, std::string> buffers_;  // nodes never move
};

// ---- writing -------------------------------------------------------------------------------------

// Creates a new LevelDB (Caffe's options: 64 KiB blocks, a 256 MiB write buffer, at most 100 open
// files) and writes records in WriteBatches of kPutsPerCommit (src/data/leveldb_writer.cpp). Finish
// also compacts the database into sorted tables, so that readers need not replay (and rewrite) the
// write-ahead log when they open it — which they could not do in a read-only folder.
class LeveldbWriter final : public DbWriter {
 public:
  LeveldbWriter(const std::string& path, const std::string& owner);
  ~LeveldbWriter() override;
  LeveldbWriter(const LeveldbWriter&) = delete;
  LeveldbWriter& operator=(const LeveldbWriter&) = delete;

  void Put(std::string key, std::string value) override;
  void Commit() override;
  void Finish() override;

 private:
  struct State;
  std::string path_, owner_;
  std::unique_ptr<State> state_;
  bool finished_ = false;
};

}  // namespace cortado
