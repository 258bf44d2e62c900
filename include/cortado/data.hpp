// data.hpp — the data path: database records (Datum messages) in, transformed float batches out.
//
//   RecordSource     every record of a database in key order, by index: size, key(i), value(i)
//   OpenRecords      a RecordSource for a DataParameter backend: LmdbRecords or LeveldbRecords
//   DbWriter         creates a database and fills it (the convert_* tools): LmdbWriter, LeveldbWriter,
//                    made by CreateDbWriter
//   MnistReader      MNIST's IDX image and label files, checked, read image by image
//   ReadImageList    the "path label" lines of an image list file (ImageData, convert_imageset)
//   DataTransformer  Datum (uint8 or float C×H×W) → floats, with mean, scale, crop and mirror
//   DataLayer        type "Data": database records through the BatchPipeline (batch_pipeline.hpp)
//   BatchUploader    host batches → a GPU net's tops through two device staging slots: the copy stream
//                    fills one while the compute stream works, ordered by events
//
// An LMDB "source" is a directory holding data.mdb and lock.mdb; a LevelDB one is a directory holding
// CURRENT, MANIFEST-*, *.ldb and LOCK (Caffe's default backend).
#pragma once

#include <lmdb.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cortado/batch_pipeline.hpp"
#include "cortado/cortado.pb.h"
#include "cortado/layer.hpp"

namespace cortado {

// ---- reading any backend -------------------------------------------------------------------------

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

// A record's key for a message: printable ASCII as it is, other bytes as \xNN, at most 64 characters
// (then "...").
std::string PrintableKey(std::string_view key);

// A tool's --backend flag: "lmdb" or "leveldb"; anything else is an Error naming the flag.
DataParameter::DB ParseBackendFlag(const std::string& name);

// ---- LMDB ----------------------------------------------------------------------------------------

// Every record of an LMDB, in key order, with random access. At open the database is checked against
// its file and walked once, and the key/value views are kept: LMDB keeps them valid while the read
// transaction is open, which is for the object's lifetime, so records are read in place, without
// copies, from any thread. Opened with MDB_RDONLY | MDB_NOTLS, once per process: every LmdbRecords of
// the same file (a train and a test net, data-parallel ranks) shares the environment, each with its
// own read transaction, as LMDB requires.
//
// LMDB trusts its file. Before anything is read through the memory map, the pages the database's
// header counts must lie inside data.mdb (a copy cut short is refused, not read into SIGBUS); the walk
// runs under a fault guard (fault_guard.hpp) with LMDB's assertions routed there; every key and value
// must lie inside the file, and the keys must ascend. Any failure is one Error naming the owner, the
// path and the record: "<owner>: LMDB '<path>' is corrupt: ...". A missing or unreadable source throws
// "<owner>: cannot open LMDB '<path>': <reason>"; an empty database throws too.
class LmdbRecords final : public RecordSource {
 public:
  LmdbRecords(const std::string& path, const std::string& owner);
  ~LmdbRecords() override;
  LmdbRecords(const LmdbRecords&) = delete;
  LmdbRecords& operator=(const LmdbRecords&) = delete;

  uint64_t size() const override { return values_.size(); }
  std::string_view key(uint64_t i) const override { return keys_[i]; }
  std::string_view value(uint64_t i) const override { return values_[i]; }
  const std::string& path() const override { return path_; }
  const char* backend_name() const override { return "LMDB"; }

 private:
  [[noreturn]] void Corrupt(const std::string& what);
  void Close();

  std::string path_, owner_;
  std::shared_ptr<MDB_env> env_;  // shared with every LmdbRecords of the same data.mdb in the process
  MDB_txn* txn_ = nullptr;
  MDB_cursor* cursor_ = nullptr;
  std::vector<std::string_view> keys_, values_;
};

// ---- LevelDB -------------------------------------------------------------------------------------

// Every record of a LevelDB, in key order, with random access (src/data/leveldb_records.cpp). The keys
// are read once at open, under a snapshot, into memory; value(i) is a db->Get of key i under that
// snapshot into the calling thread's buffer (LevelDB's reads are thread-safe). LevelDB lets one
// process open a database once, so the open handle is shared by every LeveldbRecords of the same
// path (a train and a test net reading one database both work). Missing path: Error
// "<owner>: cannot open LevelDB '<path>': No such file or directory"; an LMDB's folder is refused as
// "... it holds an LMDB (data.mdb), not a LevelDB" before LevelDB could write its files into it.
class LeveldbRecords final : public RecordSource {
 public:
  LeveldbRecords(const std::string& path, const std::string& owner);
  ~LeveldbRecords() override;
  uint64_t size() const override { return offsets_.size() - 1; }
  std::string_view key(uint64_t i) const override {
    return std::string_view(keys_).substr(offsets_[i], offsets_[i + 1] - offsets_[i]);
  }
  std::string_view value(uint64_t i) const override;
  const std::string& path() const override { return path_; }
  const char* backend_name() const override { return "LevelDB"; }

  struct Handle;  // the shared leveldb::DB and its snapshot

 private:
  std::string* Buffer() const;  // the calling thread's value buffer

  std::string path_, owner_;
  std::shared_ptr<Handle> handle_;
  std::string keys_;               // every key, concatenated in key order
  std::vector<uint64_t> offsets_;  // key i is keys_[offsets_[i], offsets_[i + 1])
  mutable std::mutex buffers_mutex_;
  mutable std::unordered_map<std::thread::id, std::string> buffers_;  // nodes never move
};

// ---- writing -------------------------------------------------------------------------------------

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

// Creates a new LMDB directory and writes records in transactions of kPutsPerCommit; when the map is
// full its size doubles and the transaction is replayed.
class LmdbWriter final : public DbWriter {
 public:
  LmdbWriter(const std::string& path, const std::string& owner, size_t initial_map_bytes = 64 << 20);
  ~LmdbWriter() override;
  LmdbWriter(const LmdbWriter&) = delete;
  LmdbWriter& operator=(const LmdbWriter&) = delete;

  void Put(std::string key, std::string value) override;
  void Commit() override;
  void Finish() override;
  size_t map_bytes() const { return map_bytes_; }

 private:
  void Check(int rc, const char* what) const;

  std::string path_, owner_;
  MDB_env* env_ = nullptr;
  size_t map_bytes_;
  bool finished_ = false;
  std::vector<std::pair<std::string, std::string>> pending_;
};

// Creates a new LevelDB (Caffe's options: 64 KiB blocks, a 256 MiB write buffer, at most 100 open
// files) and writes records in WriteBatches of kPutsPerCommit (src/data/leveldb_writer.cpp). Finish
// also compacts the database into sorted tables, so that readers need not replay (and rewrite) the
// write-ahead log when they open it — which they could not do in a read-only folder.
class LeveldbWriter final : public DbWriter {
 public:
  LeveldbWriter(const std::string& path, const std::string& owner);
  ~LeveldbWriter() override;
  LeveldbWriter(const LeveldbWriter&) = delete;
  LeveldbWriter& operator=(const LeveldbWriter&) = delete;

  void Put(std::string key, std::string value) override;
  void Commit() override;
  void Finish() override;

 private:
  struct State;
  std::string path_, owner_;
  std::unique_ptr<State> state_;
  bool finished_ = false;
};

// ---- MNIST IDX files ----------------------------------------------------------------------------

// An MNIST image file and its label file (IDX, big-endian: images magic 2051, count, rows, cols, then
// count·rows·cols uint8 pixels; labels magic 2049, count, then count uint8 labels), for
// convert_mnist_data and convert_mnist_siamese_data (src/data/mnist_idx.cpp). The constructor checks
// both headers: a missing file, a wrong magic number or differing counts is an Error naming the file.
class MnistReader {
 public:
  MnistReader(const std::string& images_path, const std::string& labels_path);
  ~MnistReader();
  uint32_t count() const { return count_; }
  uint32_t rows() const { return rows_; }
  uint32_t cols() const { return cols_; }
  // Reads the next image (rows·cols bytes into pixels) and its label; a truncated file is an Error.
  void Next(char* pixels, uint8_t* label);

 private:
  struct Files;
  std::unique_ptr<Files> files_;
  uint32_t count_ = 0, rows_ = 0, cols_ = 0;
};

// ---- image lists ---------------------------------------------------------------------------------

// One line of an image list file (ImageData's source, convert_imageset's LISTFILE): "path label",
// split at the last space or tab, so paths may hold spaces; blank lines are skipped and trailing white
// space (a Windows "\r") ignored. A line without an integer label is an Error
// "<list>:<line>: expected 'relative/path label', got '<line>'"; a file that cannot be opened too.
struct ImageListEntry {
  std::string path;  // as written, relative to the root folder
  int label;
  int line;  // in the list file, from 1
};
std::vector<ImageListEntry> ReadImageList(const std::string& list_path);

// ---- transformation ------------------------------------------------------------------------------

// A mean image as Caffe's tools write it (compute_image_mean; a BlobProto of shape 1×C×H×W, from the
// `shape` field or the legacy num/channels/height/width, values in `data` or `double_data`), read as
// C×H×W floats. `given` is the shape as the file writes it ("1×3×32×32"), for messages. A missing or
// unreadable file, an axis that is not positive, a shape that is not (1×)C×H×W (a plain H×W is C = 1),
// and a value count other than the shape's are each an Error naming the file.
struct MeanImage {
  std::vector<int> shape;  // C, H, W
  std::vector<float> values;
  std::string given;
};
MeanImage ReadMeanImage(const std::string& path);

// C·H·W of a record's (or mean image's) positive axes, or -1 when it does not fit in int64: a damaged
// header, since no record holds that many values (-1 equals no value count).
int64_t ValueCount(int channels, int height, int width);


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
  void Transform(const Datum& datum, float* out, RecordRng& rng) const;

 private:
  void CheckShape(int channels, int height, int width) const;

  TransformationParameter param_;
  Phase phase_;
  std::string owner_;
  std::vector<float> mean_;  // C·H·W values from mean_file, else empty
  std::vector<int> mean_shape_;
};

// ---- batches to a GPU ----------------------------------------------------------------------------

// The hand-off of host batches to a GPU net's tops (DESIGN.md, "Data"), double-buffered so that the
// copy of batch i+1 to the device runs on the context's copy stream while the compute stream still
// works on step i. kSlots slots, each a set of page-locked host staging buffers (HostAllocate) and
// device staging buffers (scratch blobs of the data layer, bound in the net's arena), one per top;
// Forward k uses slot k % kSlots:
//   host     Stage(): waits for the slot's previous host → device copy (kSlots Forwards ago; an
//            event, bounded look-ahead, not a sync of the current step) and returns its host buffers;
//            the layer writes the batch into them;
//   copy     Upload(top): waits for "consumed[s]" (the compute stream has read device slot s for
//            the last time), copies host slot s → device slot s, records "copied[s]";
//   compute  waits for "copied[s]", copies device slot s → the top, records "consumed[s]".
// The tops keep their addresses (the CUDA graphs captured after the data layers read them) and their
// contents change in stream order on the compute stream. The host never waits for the step it queues:
// only for a copy kSlots Forwards old, which waited for the compute stream to read the slot before,
// so the host runs at most about 2·kSlots Forwards ahead of the device. Each Forward hands its own
// batch to the net, as on the CPU (exact resume is unchanged).
// src/data/cuda/batch_copy.cu; a CPU-only build's stub throws.
class BatchUploader {
 public:
  static constexpr int kSlots = 2;

  // floats[i] floats per top i. add_scratch is the layer's AddScratch (call from LayerSetUp): it is
  // called kSlots · floats.size() times for the device staging blobs. ctx must be a GPU context.
  BatchUploader(Context& ctx, const std::vector<int64_t>& floats, const std::function<Blob*()>& add_scratch);
  ~BatchUploader();  // waits for the copies in flight before freeing the host buffers
  BatchUploader(const BatchUploader&) = delete;
  BatchUploader& operator=(const BatchUploader&) = delete;

  // The layer's Reshape: shapes the device staging blobs of top i like top[i] (floats[i] floats).
  void Reshape(const BlobVec& top);
  // The next slot's host buffers, one per top, once that slot's previous copy has read them. Calling
  // it again without Upload (a Forward that threw) returns the same slot.
  const std::vector<float*>& Stage();
  // Queues the staged batch → device slot → top[i] as above; nothing waits on the host.
  void Upload(const BlobVec& top);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// ---- data layers ---------------------------------------------------------------------------------

// The base of the layers fed by a BatchPipeline (Data, ImageData). No bottoms; tops: data
// (batch_size, C, H', W') and, optionally, label (batch_size) as floats. A subclass opens its records
// in Open and loads one in Load (the RecordLoader side, called from worker threads). rand_skip skips a
// uniform random number of records in [0, rand_skip) first; the transform seed is drawn from the
// context's generator, so a fixed random_seed repeats runs; the reader state makes resume exact.
// An error while loading (a corrupt record) is rethrown by the next Forward. On a GPU net Forward
// takes the batch into a BatchUploader's pinned staging buffers, checks its labels there, and queues
// its copy to the tops through the uploader's device staging slots (scratch blobs of this layer).
class PipelineDataLayer : public Layer, protected RecordLoader {
 public:
  PipelineDataLayer(const LayerParameter& param, Context& ctx) : Layer(param, ctx) {}
  ~PipelineDataLayer() override;  // stops the pipeline's threads

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) final;
  void Reshape(const BlobVec& bottom, const BlobVec& top) final;
  int ExactNumBottomBlobs() const override { return 0; }
  int MinTopBlobs() const override { return 1; }
  int MaxTopBlobs() const override { return 2; }
  bool CanCheckLabels() const override { return true; }  // GPU nets: the batch's labels, on the host

  // Records handed to the net by Forward so far (the rand_skip records and batches still waiting in
  // the ring are not counted), and the records rand_skip skipped.
  uint64_t records_consumed() const { return position_ - records_skipped_; }
  uint64_t records_skipped() const { return records_skipped_; }

  // Exact resume: the pipeline restarts at `position` with the given seed; batches in the ring are
  // dropped and loaded again.
bool BackwardReadsTopData(int) const override { return false; }  // no backward
    bool HasReader() const override { return true; }
  ReaderState reader_state() const override { return {position_, seed_}; }
  void RestoreReaderState(const ReaderState& state) override;
  double reader_wait_seconds() const override { return wait_seconds_; }

 protected:
  struct Source {
    int batch_size = 1;
    uint32_t rand_skip = 0;
    int prefetch = 4;
    int threads = 0;  // 0: DefaultDataThreads()
    bool shuffle = false;
    std::vector<int> item_shape;  // {C, H', W'} of one transformed record
  };
  // Checks the layer's parameters, opens the records and reads the first for the item shape.
  virtual Source Open(bool has_label) = 0;

  // Joins the pipeline's threads. A subclass calls it first thing in its destructor, since the
  // threads use the subclass's members through Load.
  void StopPipeline() { pipeline_.reset(); }

  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_cpu(const BlobVec&, const std::vector<bool>&, const BlobVec&) override {}
  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_gpu(const BlobVec&, const std::vector<bool>&, const BlobVec&) override {}

 private:
  void StartPipeline(const ReaderState& state);

  Source source_;
  bool has_label_top_ = false;
  uint64_t position_ = 0;  // records of the stream handed out (by every rank, batch_pipeline.hpp), rand_skip included
  uint64_t seed_ = 0;
  uint64_t records_skipped_ = 0;
  double wait_seconds_ = 0;  // Forward's total time waiting for a batch
  std::unique_ptr<BatchPipeline> pipeline_;
  std::unique_ptr<BatchUploader> uploader_;  // GPU nets only
};

// Data (DataParameter source, batch_size, backend: LEVELDB (Caffe's default) or LMDB, rand_skip,
// prefetch, our threads and shuffle; transform_param): Datums from a database, in key order (LMDB's
// read in place, LevelDB's through a per-worker buffer); encoded ones (JPEG, PNG) are decoded in the
// workers, as colour or grey per transform_param force_color / force_gray.
class DataLayer : public PipelineDataLayer {
 public:
  DataLayer(const LayerParameter& param, Context& ctx);
  ~DataLayer() override;
  const char* type() const override { return "Data"; }

 protected:
  Source Open(bool has_label) override;
  uint64_t num_records() const override { return records_->size(); }
  void PrepareWorkers(int count) override;
  void Load(uint64_t index, int worker, float* out, float* label, RecordRng& rng) override;

 private:
  // Parses record `index` into `datum`, decoding it into `decoded` when encoded; returns the one
  // holding pixels.
  const Datum& Parse(uint64_t index, Datum* datum, Datum* decoded) const;
  std::string RecordName(uint64_t index) const;  // "record '<key>' of LMDB '<path>'", for messages

  std::unique_ptr<RecordSource> records_;
  std::unique_ptr<DataTransformer> transformer_;
  std::vector<int> record_shape_;  // C×H×W of every record (after decoding)
  struct WorkerScratch {
    Datum datum, decoded;
  };
  std::vector<WorkerScratch> scratch_;
};

}  // namespace cortado
