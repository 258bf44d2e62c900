// pipeline_data_layer.hpp — the data layers fed by the BatchPipeline (batch_pipeline.hpp).
//
//   PipelineDataLayer  their base: setup, rand_skip, seeds, Forward through the pipeline (on a GPU net
//                      through a BatchUploader), exact resume (pipeline_data_layer.cpp)
//   DataLayer          type "Data": database records through the BatchPipeline (data.cpp)
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cortado/batch_pipeline.hpp"
#include "cortado/cortado.pb.h"
#include "cortado/data/batch_uploader.hpp"
#include "cortado/data/records.hpp"
#include "cortado/data/transformer.hpp"
#include "cortado/layer.hpp"

namespace cortado {

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
// prefetch, our threads, NVIDIA's shuffle and cache; transform_param): Datums from a database, in key
// order (LMDB's read in place, LevelDB's through a per-worker buffer; with cache, from memory after a
// record's first read); encoded ones (JPEG, PNG) are decoded in the workers, as colour or grey per
// transform_param force_color / force_gray. With a resize (transform_param img_rand_resize_*,
// *_stretch_*) records may differ in height and width.
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
