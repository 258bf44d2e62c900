// records.cpp — the backend factories: OpenRecords (LMDB or LevelDB reading), CreateDbWriter (the
// convert_* tools' writing), the tools' --backend flag, and keys printed for messages.
#include "cortado/data/db_writer.hpp"
#include "cortado/data/leveldb.hpp"
#include "cortado/data/lmdb.hpp"
#include "cortado/data/records.hpp"
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

std::string PrintableKey(std::string_view key) {
  std::string text;
  for (const char c : key) {
    if (text.size() >= 64) return text + "...";
    if (c >= 0x20 && c < 0x7f) {
      text += c;
    } else {
      static const char kHex[] = "0123456789abcdef";
      const auto byte = static_cast<unsigned char>(c);
      text += {'\\', 'x', kHex[byte >> 4], kHex[byte & 0xf]};
    }
  }
  return text;
}

DataParameter::DB ParseBackendFlag(const std::string& name) {
  if (name == "lmdb") return DataParameter::LMDB;
  if (name == "leveldb") return DataParameter::LEVELDB;
  Fail("unknown --backend=", name, "; use --backend=lmdb or --backend=leveldb");
}

}  // namespace cortado
