// records.hpp — reading a database of records (Datum messages), whatever its backend.
//
//   RecordSource     every record of a database in key order, by index: size, key(i), value(i)
//   OpenRecords      a RecordSource for a DataParameter backend: LmdbRecords (lmdb.hpp) or
//                    LeveldbRecords (leveldb.hpp)
//   CacheRecords     a RecordSource that keeps each record's bytes in memory once read (data_param cache)
//   PrintableKey     a record's key for messages; ParseBackendFlag, a tool's --backend flag
//
// An LMDB "source" is a directory holding data.mdb and lock.mdb; a LevelDB one is a directory holding
// CURRENT, MANIFEST-*, *.ldb and LOCK (Caffe's default backend).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "cortado/cortado.pb.h"

namespace cortado {

// Every record of a database, in key order (bytewise, the order of both LMDB and LevelDB), by index,
// safe to call from several threads at once. key(i) views stay valid for the object's lifetime;
// value(i) views stay valid until the same thread's next value() call on this object (LevelDB reads
// into a per-thread buffer) — or, for LMDB, for the object's lifetime. Opening an empty database is
// an Error.
class RecordSource {
 public:
  virtual ~RecordSource() = default;
  virtual uint64_t size() const = 0;
  virtual std::string_view key(uint64_t i) const = 0;
  virtual std::string_view value(uint64_t i) const = 0;
  virtual const std::string& path() const = 0;
  virtual const char* backend_name() const = 0;  // "LMDB" or "LevelDB", for messages
};

// Opens `path` as `backend` (DataParameter::LMDB or ::LEVELDB). `owner` prefixes error messages
// ("layer mnist (Data)"; "" for none); every error is one line naming the path.
std::unique_ptr<RecordSource> OpenRecords(DataParameter::DB backend, const std::string& path,
                                          const std::string& owner);

// DataParameter `cache` (NVIDIA Caffe's): wraps `source` so that each record's value, the first time it
// is read, is copied into memory, and every later read of it comes from there instead of the database.
// Values are the same bytes, so batches are the same as without the cache; value(i) views stay valid
// for the wrapper's lifetime. Safe from several threads at once, without a lock on the reading path
// (two threads reading one record first may both read the database; one copy is kept). Memory grows
// to the size of every record read.
std::unique_ptr<RecordSource> CacheRecords(std::unique_ptr<RecordSource> source);

// A record's key for a message: printable ASCII as it is, other bytes as \xNN, at most 64 characters
// (then "...").
std::string PrintableKey(std::string_view key);

// A tool's --backend flag: "lmdb" or "leveldb"; anything else is an Error naming the flag.
DataParameter::DB ParseBackendFlag(const std::string& name);

}  // namespace cortado
