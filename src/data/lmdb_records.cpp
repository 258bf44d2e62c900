// lmdb_records.cpp — LmdbRecords: one walk of the cursor at open, then random access to every record
// through views into the read transaction the cursor keeps open.
#include "cortado/data.hpp"

namespace cortado {

LmdbRecords::LmdbRecords(const std::string& path, const std::string& owner) : cursor_(path, owner) {
  const uint64_t n = cursor_.num_records();
  keys_.reserve(n);
  values_.reserve(n);
  for (uint64_t i = 0; i < n; ++i) {
    if (i > 0) cursor_.Next();
    keys_.push_back(cursor_.key());
    values_.push_back(cursor_.value());
  }
}

}  // namespace cortado
