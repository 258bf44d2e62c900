// db_writer.hpp — DbWriter: creates a database and fills it (the convert_* tools): LmdbWriter
// (lmdb.hpp), LeveldbWriter (leveldb.hpp), made by CreateDbWriter.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "cortado/cortado.pb.h"

namespace cortado {

// A database being written: Put buffers records and writes them in batches of kPutsPerCommit; call
// Finish() to write the tail. Both backends create a new directory and refuse a path that exists
// ("'<path>' already exists; remove it or choose another name"); a writer destroyed before Finish (a
// conversion that failed) removes the directory it created, so no partial database is left behind.
// Error messages start with "<owner>: " when owner is not empty.
class DbWriter {
 public:
  static constexpr size_t kPutsPerCommit = 1000;
  virtual ~DbWriter() = default;
  virtual void Put(std::string key, std::string value) = 0;
  virtual void Commit() = 0;  // writes the buffered puts now
  virtual void Finish() = 0;  // writes the tail; the database is then complete and stays
};

// A new DbWriter of `backend` (DataParameter::LMDB or ::LEVELDB) at `path`.
std::unique_ptr<DbWriter> CreateDbWriter(DataParameter::DB backend, const std::string& path,
                                         const std::string& owner);

}  // namespace cortado
