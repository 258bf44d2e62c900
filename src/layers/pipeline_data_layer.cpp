// pipeline_data_layer.cpp — PipelineDataLayer: the part every pipelined data layer shares (setup,
// rand_skip, seeds, Forward through the BatchPipeline — on a GPU net, into a BatchUploader's pinned
// staging buffers, whose copy to the tops (through device staging slots, scratch blobs of this layer)
// overlaps the step before — exact-resume state, time spent waiting).
#include "pipeline_data_layer.hpp"

#include <glog/logging.h>

#include "cortado/error.hpp"
#include "cortado/gpu.hpp"  // BuiltWithCuda

namespace cortado {

PipelineDataLayer::~PipelineDataLayer() = default;

void PipelineDataLayer::LayerSetUp(const BlobVec& bottom, const BlobVec& top) {
  pipeline_.reset();
  has_label_top_ = top.size() > 1;
  source_ = Open(has_label_top_);
  CORTADO_REQUIRE(source_.batch_size > 0, Describe(), ": batch_size must be positive");
  CORTADO_REQUIRE(source_.prefetch > 0, Describe(), ": prefetch must be positive");
  if (source_.threads <= 0) source_.threads = DefaultDataThreads();
  records_skipped_ = source_.rand_skip > 0 ? ctx_.rng()() % source_.rand_skip : 0;
  if (records_skipped_ > 0) LOG(INFO) << "Skipping first " << records_skipped_ << " data points.";
  const uint64_t seed = ctx_.rng()();
  const auto& shape = source_.item_shape;
  LOG(INFO) << "output data size: " << source_.batch_size << "," << shape[0] << "," << shape[1] << ","
            << shape[2] << " (" << source_.threads << " loader threads)";
  StartPipeline({records_skipped_, seed});
  uploader_.reset();
  if (ctx_.device() == Device::kGPU) {
    std::vector<int64_t> floats = {int64_t{source_.batch_size} * shape[0] * shape[1] * shape[2]};
    if (has_label_top_) floats.push_back(source_.batch_size);
    uploader_ = std::make_unique<BatchUploader>(ctx_, floats, [this] { return AddScratch(); });
  }
}

void PipelineDataLayer::StartPipeline(const ReaderState& state) {
  pipeline_.reset();  // joins the previous threads, if any
  PipelineOptions options;
  options.owner = Describe();
  options.batch_size = source_.batch_size;
  options.item_count = source_.item_shape[0] * source_.item_shape[1] * source_.item_shape[2];
  options.has_label = has_label_top_;
  options.prefetch = source_.prefetch;
  options.threads = source_.threads;
  options.shuffle = source_.shuffle;
  options.seed = state.seed;
  options.start_position = state.position;
  if (phase() == TRAIN) {  // data-parallel training: this rank's block of every batch
    options.shard_index = ctx_.rank();
    options.shard_count = ctx_.ranks();
  }
  position_ = state.position;
  seed_ = state.seed;
  pipeline_ = std::make_unique<BatchPipeline>(static_cast<RecordLoader&>(*this), options);
}

void PipelineDataLayer::RestoreReaderState(const ReaderState& state) {
  StartPipeline(state);
  records_skipped_ = std::min(records_skipped_, state.position);
}

void PipelineDataLayer::Reshape(const BlobVec& bottom, const BlobVec& top) {
  const auto& shape = source_.item_shape;
  top[0]->Reshape(std::vector<int>{source_.batch_size, shape[0], shape[1], shape[2]});
  if (top.size() > 1) top[1]->Reshape(std::vector<int>{source_.batch_size});
  if (uploader_) uploader_->Reshape(top);
}

void PipelineDataLayer::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  CHECK(pipeline_) << Describe() << ": Forward before SetUp";
  wait_seconds_ += pipeline_->Next(top[0]->data(), top.size() > 1 ? top[1]->data() : nullptr);
  position_ = pipeline_->position();
}

void PipelineDataLayer::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  CHECK(pipeline_ && uploader_) << Describe() << ": Forward before SetUp";
  const std::vector<float*>& staging = uploader_->Stage();
  const bool label = top.size() > 1;
  wait_seconds_ += pipeline_->Next(staging[0], label ? staging[1] : nullptr);
  position_ = pipeline_->position();
  if (label) CheckLabelsOnHost(1, staging[1], source_.batch_size);
  uploader_->Upload(top);
}

}  // namespace cortado
