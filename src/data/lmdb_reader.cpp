// lmdb_reader.cpp — LMDB access: a read-only wrapping cursor (LmdbRecords and compute_image_mean walk
// it) and a batched writer for the convert_* tools.
#include <glog/logging.h>
#include <sys/stat.h>  // mkdir

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "cortado/data.hpp"
#include "cortado/error.hpp"

namespace cortado {

// ---- reading -------------------------------------------------------------------------------------

LmdbCursor::LmdbCursor(const std::string& path, const std::string& owner)
    : path_(path), owner_(owner.empty() ? "" : owner + ": ") {
  int rc = mdb_env_create(&env_);
  if (rc == MDB_SUCCESS) rc = mdb_env_open(env_, path.c_str(), MDB_RDONLY | MDB_NOTLS, 0664);
  if (rc == MDB_SUCCESS) rc = mdb_txn_begin(env_, nullptr, MDB_RDONLY, &txn_);
  if (rc == MDB_SUCCESS) rc = mdb_dbi_open(txn_, nullptr, 0, &dbi_);
  if (rc == MDB_SUCCESS) rc = mdb_cursor_open(txn_, dbi_, &cursor_);
  MDB_stat stat{};
  if (rc == MDB_SUCCESS) rc = mdb_stat(txn_, dbi_, &stat);
  if (rc != MDB_SUCCESS) {
    Close();
    if (rc == ENOENT && std::filesystem::exists(path_ + "/CURRENT"))
      Fail(owner_, "cannot open LMDB '", path_, "': it holds a LevelDB (CURRENT), not an LMDB");
    Fail(owner_, "cannot open LMDB '", path_, "': ", mdb_strerror(rc));
  }
  num_records_ = stat.ms_entries;
  rc = mdb_cursor_get(cursor_, &key_, &value_, MDB_FIRST);
  if (rc != MDB_SUCCESS) {
    Close();
    if (rc == MDB_NOTFOUND) Fail(owner_, "LMDB '", path_, "' holds no records");
    Fail(owner_, "cannot read LMDB '", path_, "': ", mdb_strerror(rc));
  }
}

LmdbCursor::~LmdbCursor() { Close(); }

void LmdbCursor::Close() {
  if (cursor_) mdb_cursor_close(cursor_);
  if (txn_) mdb_txn_abort(txn_);
  if (env_) mdb_env_close(env_);
  cursor_ = nullptr, txn_ = nullptr, env_ = nullptr;
}

void LmdbCursor::Check(int rc, const char* what) const {
  CORTADO_REQUIRE(rc == MDB_SUCCESS, owner_, "reading LMDB '", path_, "' failed (", what, "): ",
                  mdb_strerror(rc));
}

void LmdbCursor::Next() {
  int rc = mdb_cursor_get(cursor_, &key_, &value_, MDB_NEXT);
  if (rc == MDB_NOTFOUND) {
    LOG(INFO) << "Restarting data prefetching from start.";
    rc = mdb_cursor_get(cursor_, &key_, &value_, MDB_FIRST);
  }
  Check(rc, "mdb_cursor_get");
}

// ---- writing -------------------------------------------------------------------------------------

LmdbWriter::LmdbWriter(const std::string& path, const std::string& owner, size_t initial_map_bytes)
    : path_(path), owner_(owner.empty() ? "" : owner + ": "), map_bytes_(initial_map_bytes) {
  if (::mkdir(path.c_str(), 0755) != 0) {
    if (errno == EEXIST) Fail(owner_, "'", path_, "' already exists; remove it or choose another name");
    Fail(owner_, "cannot create LMDB '", path_, "': ", std::strerror(errno));
  }
  int rc = mdb_env_create(&env_);
  if (rc == MDB_SUCCESS) rc = mdb_env_set_mapsize(env_, map_bytes_);
  if (rc == MDB_SUCCESS) rc = mdb_env_open(env_, path.c_str(), 0, 0664);
  if (rc != MDB_SUCCESS) {
    if (env_) mdb_env_close(env_);
    env_ = nullptr;
    Fail(owner_, "cannot create LMDB '", path_, "': ", mdb_strerror(rc));
  }
  pending_.reserve(kPutsPerCommit);
}

LmdbWriter::~LmdbWriter() {
  if (env_) mdb_env_close(env_);
}

void LmdbWriter::Check(int rc, const char* what) const {
  CORTADO_REQUIRE(rc == MDB_SUCCESS, owner_, "writing LMDB '", path_, "' failed (", what, "): ",
                  mdb_strerror(rc));
}

void LmdbWriter::Put(std::string key, std::string value) {
  pending_.emplace_back(std::move(key), std::move(value));
  if (pending_.size() >= kPutsPerCommit) Commit();
}

void LmdbWriter::Commit() {
  if (pending_.empty()) return;
  for (;;) {
    MDB_txn* txn = nullptr;
    Check(mdb_txn_begin(env_, nullptr, 0, &txn), "mdb_txn_begin");
    MDB_dbi dbi;
    int rc = mdb_dbi_open(txn, nullptr, 0, &dbi);
    for (size_t i = 0; rc == MDB_SUCCESS && i < pending_.size(); ++i) {
      MDB_val key{pending_[i].first.size(), pending_[i].first.data()};
      MDB_val value{pending_[i].second.size(), pending_[i].second.data()};
      rc = mdb_put(txn, dbi, &key, &value, 0);
    }
    if (rc == MDB_SUCCESS) {
      rc = mdb_txn_commit(txn);  // frees txn whatever the outcome
    } else {
      mdb_txn_abort(txn);
    }
    if (rc == MDB_MAP_FULL) {  // grow the map and replay the whole transaction
      map_bytes_ *= 2;
      Check(mdb_env_set_mapsize(env_, map_bytes_), "mdb_env_set_mapsize");
      continue;
    }
    Check(rc, "mdb_put/mdb_txn_commit");
    break;
  }
  pending_.clear();
}

}  // namespace cortado
