// lmdb_writer.cpp — LmdbWriter: a new LMDB filled in batched transactions, for the convert_* tools
// (reading is lmdb_records.cpp).
#include <glog/logging.h>
#include <sys/stat.h>  // mkdir

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "cortado/data/lmdb.hpp"
#include "cortado/error.hpp"

namespace cortado {

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
  std::error_code ec;
  if (!finished_) std::filesystem::remove_all(path_, ec);  // an unfinished database is not left behind
}

void LmdbWriter::Finish() {
  Commit();
  finished_ = true;
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
