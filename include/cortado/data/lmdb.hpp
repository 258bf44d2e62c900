// lmdb.hpp — the LMDB backend: LmdbRecords reads one (a RecordSource), LmdbWriter writes one (a
// DbWriter). An LMDB "source" is a directory holding data.mdb and lock.mdb. The only header that
// includes <lmdb.h>.
#pragma once

#include <lmdb.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cortado/data/db_writer.hpp"
#include "cortado/data/records.hpp"

namespace cortado {

// ---- reading -------------------------------------------------------------------------------------

// Every record of an LMDB, in key order, with random access. At open the database is checked against
// its file and walked once, and the key/value views are kept: LMDB keeps them valid while the read
// transaction is open, which is for the object's lifetime, so records are read in place, without
// copies, from any thread. Opened with MDB_RDONLY | MDB_NOTLS, once per process: every LmdbRecords of
// the same file (a train and a test net, data-parallel ranks) shares the environment, each with its
// own read transaction, as LMDB requires.
//
// LMDB trusts its file. Before anything is read through the memory map, the pages the database's
// header counts must lie inside data.mdb (a copy cut short is refused, not read into SIGBUS); the walk
// runs under a fault guard (fault_guard.hpp) with LMDB's assertions routed there; every key and value
// must lie inside the file, and the keys must ascend. Any failure is one Error naming the owner, the
// path and the record: "<owner>: LMDB '<path>' is corrupt: ...". A missing or unreadable source throws
// "<owner>: cannot open LMDB '<path>': <reason>"; an empty database throws too.
class LmdbRecords final : public RecordSource {
 public:
  LmdbRecords(const std::string& path, const std::string& owner);
  ~LmdbRecords() override;
  LmdbRecords(const LmdbRecords&) = delete;
  LmdbRecords& operator=(const LmdbRecords&) = delete;

  uint64_t size() const override { return values_.size(); }
  std::string_view key(uint64_t i) const override { return keys_[i]; }
  std::string_view value(uint64_t i) const override { return values_[i]; }
  const std::string& path() const override { return path_; }
  const char* backend_name() const override { return "LMDB"; }

 private:
  [[noreturn]] void Corrupt(const std::string& what);
  void Close();

  std::string path_, owner_;
  std::shared_ptr<MDB_env> env_;  // shared with every LmdbRecords of the same data.mdb in the process
  MDB_txn* txn_ = nullptr;
  MDB_cursor* cursor_ = nullptr;
  std::vector<std::string_view> keys_, values_;
};

// ---- writing -------------------------------------------------------------------------------------

// Creates a new LMDB directory and writes records in transactions of kPutsPerCommit; when the map is
// full its size doubles and the transaction is replayed.
class LmdbWriter final : public DbWriter {
 public:
  LmdbWriter(const std::string& path, const std::string& owner, size_t initial_map_bytes = 64 << 20);
  ~LmdbWriter() override;
  LmdbWriter(const LmdbWriter&) = delete;
  LmdbWriter& operator=(const LmdbWriter&) = delete;

  void Put(std::string key, std::string value) override;
  void Commit() override;
  void Finish() override;
  size_t map_bytes() const { return map_bytes_; }

 private:
  void Check(int rc, const char* what) const;

  std::string path_, owner_;
  MDB_env* env_ = nullptr;
  size_t map_bytes_;
  bool finished_ = false;
  std::vector<std::pair<std::string, std::string>> pending_;
};

}  // namespace cortado
