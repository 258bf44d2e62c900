// records.cpp — the backend factories: OpenRecords (LMDB or LevelDB reading), CreateDbWriter (the
// convert_* tools' writing) and the tools' --backend flag.
#include "cortado/data.hpp"
#include "cortado/error.hpp"

namespace cortado {

std::unique_ptr<RecordSource> OpenRecords(DataParameter::DB backend, const std::string& path,
                                          const std::string& owner) {
  if (backend == DataParameter::LEVELDB) return std::make_unique<LeveldbRecords>(path, owner);
  return std::make_unique<LmdbRecords>(path, owner);
}

std::unique_ptr<DbWriter> CreateDbWriter(DataParameter::DB backend, const std::string& path,
                                         const std::string& owner) {
  if (backend == DataParameter::LEVELDB) return std::make_unique<LeveldbWriter>(path, owner);
  return std::make_unique<LmdbWriter>(path, owner);
}

DataParameter::DB ParseBackendFlag(const std::string& name) {
  if (name == "lmdb") return DataParameter::LMDB;
  if (name == "leveldb") return DataParameter::LEVELDB;
  Fail("unknown --backend=", name, "; use --backend=lmdb or --backend=leveldb");
}

}  // namespace cortado
