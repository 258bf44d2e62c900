// lmdb_fuzzer.cpp — a whole LMDB: the input is its data.mdb (lock.mdb comes from a fresh database of
// the harness's own), opened as the Data layer and compute_image_mean open one (checked against the
// file, walked under the fault guard), and every record (up to 4096) read and parsed as a Datum.
#include <filesystem>

#include "cortado/data/lmdb.hpp"
#include "cortado/data/records.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string lock = [] {  // a lock.mdb LMDB accepts, made once
    const std::string made = cortado::fuzz::FreshFolder("lock_source") + "/db";
    cortado::LmdbWriter writer(made, "");
    writer.Put("k", "v");
    writer.Finish();
    return made + "/lock.mdb";
  }();
  const std::string db = cortado::fuzz::FreshFolder("db");
  std::filesystem::copy_file(lock, db + "/lock.mdb");
  cortado::fuzz::WriteInput("db/data.mdb", data, size);
  return cortado::fuzz::Run([&] {
    const auto records = cortado::OpenRecords(cortado::DataParameter::LMDB, db, "layer data (Data)");
    cortado::fuzz::ParseEveryRecord(*records);
  });
}
