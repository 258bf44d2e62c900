// data.hpp — the data path: LMDB records (Datum messages) in, transformed float batches out.
//
//   LmdbCursor       walks a database's records in key order, read-only, wrapping to the start
//   LmdbWriter       creates a database and fills it (the convert_* tools)
//   DataTransformer  Datum (uint8 or float C×H×W) → floats, with mean, scale, crop and mirror
//   DataLayer        type "Data": a prefetch thread fills a ring of host batches ahead of Forward
//
// An LMDB "source" is a directory holding data.mdb and lock.mdb.
#pragma once

#include <lmdb.h>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cortado/cortado.pb.h"
#include "cortado/layer.hpp"

namespace cortado {

// ---- LMDB ----------------------------------------------------------------------------------------

// A read-only cursor over every record of an LMDB, in key order. After the last record it wraps to
// the first and logs "Restarting data prefetching from start.". The key/value views stay valid until
// the next call to Next(). Opened with MDB_RDONLY | MDB_NOTLS, so it may be used from a thread other
// than the one that opened it (one thread at a time).
class LmdbCursor {
 public:
  // `owner` prefixes error messages ("layer mnist (Data)"). A missing or unreadable source throws
  // Error "<owner>: cannot open LMDB '<path>': <reason>"; an empty database throws too.
  LmdbCursor(const std::string& path, const std::string& owner);
  ~LmdbCursor();
  LmdbCursor(const LmdbCursor&) = delete;
  LmdbCursor& operator=(const LmdbCursor&) = delete;

  std::string_view key() const { return {static_cast<const char*>(key_.mv_data), key_.mv_size}; }
  std::string_view value() const { return {static_cast<const char*>(value_.mv_data), value_.mv_size}; }
  void Next();
  uint64_t num_records() const { return num_records_; }
  const std::string& path() const { return path_; }

 private:
  void Check(int rc, const char* what) const;
  void Close();

  std::string path_, owner_;
  MDB_env* env_ = nullptr;
  MDB_txn* txn_ = nullptr;
  MDB_dbi dbi_ = 0;
  MDB_cursor* cursor_ = nullptr;
  MDB_val key_{}, value_{};
  uint64_t num_records_ = 0;
};

// Creates a new LMDB directory (an existing one is an Error: never overwritten) and writes records.
// Puts are buffered and committed in transactions of 1000; when the map is full its size doubles and
// the transaction is replayed. Call Finish() to commit the tail; the destructor drops uncommitted puts.
// Error messages start with "<owner>: " when owner is not empty.
class LmdbWriter {
 public:
  static constexpr size_t kPutsPerCommit = 1000;
  LmdbWriter(const std::string& path, const std::string& owner, size_t initial_map_bytes = 64 << 20);
  ~LmdbWriter();
  LmdbWriter(const LmdbWriter&) = delete;
  LmdbWriter& operator=(const LmdbWriter&) = delete;

  void Put(std::string key, std::string value);
  void Commit();  // writes the buffered puts now
  void Finish() { Commit(); }
  size_t map_bytes() const { return map_bytes_; }

 private:
  void Check(int rc, const char* what) const;

  std::string path_, owner_;
  MDB_env* env_ = nullptr;
  size_t map_bytes_;
  std::vector<std::pair<std::string, std::string>> pending_;
};

// ---- transformation ------------------------------------------------------------------------------

// Per output element: y = (x − mean) · scale, where x is the datum's pixel (uint8 `data`, or
// `float_data` when `data` is empty) and mean is mean_file's value at the same pixel (a BlobProto of
// shape 1×C×H×W, the datum's full size) or mean_value[c] (one value, or one per channel); the two are
// exclusive. crop_size k > 0 takes a k×k window: uniformly random offsets in TRAIN, the centre
// ((H−k)/2, (W−k)/2) in TEST. mirror flips the window horizontally with probability ½ in TRAIN only.
// Random draws, in order: flip (rng() % 2), then row and column offsets (rng() % (H−k+1), ...).
class DataTransformer {
 public:
  // Reads the mean file now. `owner` prefixes error messages.
  DataTransformer(const TransformationParameter& param, Phase phase, std::string owner);

  // Output shape {C, H', W'} for a datum of C×H×W (H' = W' = crop_size when cropping); throws when
  // the crop is larger than the image, the mean file's shape differs or mean_value's count is wrong.
  std::vector<int> OutputShape(const Datum& datum) const;
  // Writes C·H'·W' floats to out. Throws Error for encoded datums and malformed payloads.
  void Transform(const Datum& datum, float* out, std::mt19937& rng) const;

 private:
  void CheckShape(int channels, int height, int width) const;

  TransformationParameter param_;
  Phase phase_;
  std::string owner_;
  std::vector<float> mean_;  // C·H·W values from mean_file, else empty
  std::vector<int> mean_shape_;
};

// ---- the Data layer ------------------------------------------------------------------------------

// Data (DataParameter source, batch_size, backend: LMDB, rand_skip, prefetch; transform_param).
// No bottoms. Tops: data (batch_size, C, H', W') and, optionally, label (batch_size), labels as
// floats. The records come in key order, wrapping at the end; rand_skip skips a uniform random number
// of records in [0, rand_skip) first. A prefetch thread fills a ring of `prefetch` host batches ahead
// of Forward, with its own generator seeded from the context's, so a fixed random_seed repeats runs.
// An error while reading (a corrupt record) is rethrown by the next Forward.
class DataLayer : public Layer {
 public:
  DataLayer(const LayerParameter& param, Context& ctx);
  ~DataLayer() override;  // stops and joins the prefetch thread, even while it waits

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override;
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;
  const char* type() const override { return "Data"; }
  int ExactNumBottomBlobs() const override { return 0; }
  int MinTopBlobs() const override { return 1; }
  int MaxTopBlobs() const override { return 2; }

  // Records handed to the net by Forward so far (batch_size per call; the rand_skip records and
  // batches still waiting in the ring are not counted).
  uint64_t records_consumed() const { return records_consumed_; }
  // Records skipped at start by rand_skip.
  uint64_t records_skipped() const { return records_skipped_; }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_cpu(const BlobVec&, const std::vector<bool>&, const BlobVec&) override {}

 private:
  struct Prefetcher;  // the thread, its queues and the batch ring (data.cpp)

  std::vector<int> data_shape_;  // {batch, C, H', W'}
  uint64_t records_consumed_ = 0;
  uint64_t records_skipped_ = 0;
  std::unique_ptr<Prefetcher> prefetcher_;
};

}  // namespace cortado
