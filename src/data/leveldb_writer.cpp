// leveldb_writer.cpp — LeveldbWriter: a new LevelDB, with Caffe's options, filled in WriteBatches of
// kPutsPerCommit records and compacted when finished.
#include <leveldb/db.h>           // leveldb::DB, Options, WriteOptions, Status
#include <leveldb/write_batch.h>  // leveldb::WriteBatch

#include <filesystem>

#include "cortado/data/leveldb.hpp"
#include "cortado/error.hpp"

namespace cortado {

struct LeveldbWriter::State {
  std::unique_ptr<leveldb::DB> db;
  leveldb::WriteBatch batch;
  size_t pending = 0;
};

LeveldbWriter::LeveldbWriter(const std::string& path, const std::string& owner)
    : path_(path), owner_(owner.empty() ? "" : owner + ": "), state_(std::make_unique<State>()) {
  std::error_code ec;
  if (std::filesystem::exists(std::filesystem::symlink_status(path, ec)))
    Fail(owner_, "'", path_, "' already exists; remove it or choose another name");
  leveldb::Options options;
  options.create_if_missing = true;
  options.error_if_exists = true;
  options.block_size = 65536;              // Caffe's db_leveldb.cpp
  options.write_buffer_size = 268435456;
  options.max_open_files = 100;
  leveldb::DB* db = nullptr;
  const leveldb::Status s = leveldb::DB::Open(options, path, &db);
  if (!s.ok()) Fail(owner_, "cannot create LevelDB '", path_, "': ", s.ToString());
  state_->db.reset(db);
}

LeveldbWriter::~LeveldbWriter() {
  state_.reset();  // closes the database
  std::error_code ec;
  if (!finished_) std::filesystem::remove_all(path_, ec);  // an unfinished database is not left behind
}

void LeveldbWriter::Put(std::string key, std::string value) {
  state_->batch.Put(key, value);
  if (++state_->pending >= kPutsPerCommit) Commit();
}

void LeveldbWriter::Commit() {
  if (state_->pending == 0) return;
  const leveldb::Status s = state_->db->Write(leveldb::WriteOptions(), &state_->batch);
  CORTADO_REQUIRE(s.ok(), owner_, "writing LevelDB '", path_, "' failed: ", s.ToString());
  state_->batch.Clear();
  state_->pending = 0;
}

void LeveldbWriter::Finish() {
  Commit();
  state_->db->CompactRange(nullptr, nullptr);  // the memtable and log into sorted tables
  finished_ = true;
}

}  // namespace cortado
