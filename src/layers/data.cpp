// data.cpp — the Data layer: Datums from an LMDB or a LevelDB (Caffe's default backend), read by index
// by the BatchPipeline's workers (from memory after their first read with data_param cache), decoded
// when encoded, and transformed into the batch.
#include <glog/logging.h>

#include <cstdint>
#include <filesystem>

#include "cortado/data/records.hpp"
#include "cortado/data/transformer.hpp"
#include "cortado/error.hpp"
#include "cortado/image.hpp"
#include "cortado/layer_registry.hpp"
#include "pipeline_data_layer.hpp"

namespace cortado {

DataLayer::DataLayer(const LayerParameter& param, Context& ctx) : PipelineDataLayer(param, ctx) {}

// The pipeline's workers call Load: stop them before the records and scratch they use go away.
DataLayer::~DataLayer() { StopPipeline(); }

PipelineDataLayer::Source DataLayer::Open(bool has_label) {
  const DataParameter& dp = param_.data_param();
  CORTADO_REQUIRE(!dp.source().empty(), Describe(), ": data_param.source is empty; give the database directory");
  CORTADO_REQUIRE(!dp.has_scale() && !dp.has_mean_file() && !dp.has_crop_size() && !dp.has_mirror(),
                  Describe(), ": data_param.scale/mean_file/crop_size/mirror are legacy; "
                  "move them to transform_param");
  // Caffe's default backend is LEVELDB: an LMDB source without `backend: LMDB` gets a clear hint.
  CORTADO_REQUIRE(dp.backend() != DataParameter::LEVELDB ||
                      !std::filesystem::exists(dp.source() + "/data.mdb") ||
                      std::filesystem::exists(dp.source() + "/CURRENT"),
                  Describe(), ": '", dp.source(), "' is an LMDB but data_param.backend is LEVELDB (Caffe's "
                  "default when backend is not given); set backend: LMDB");
  records_ = OpenRecords(dp.backend(), dp.source(), Describe());
  if (dp.cache()) {
    records_ = CacheRecords(std::move(records_));
    LOG(INFO) << Describe() << ": caching the records of " << records_->backend_name() << " '" << records_->path()
              << "' in memory as they are read";
  }
  transformer_ = std::make_unique<DataTransformer>(param_.transform_param(), param_.phase(), Describe());
  // The first record gives the shape of every record: check that it holds C·H·W values before its
  // shape sizes the batches (a damaged record's header could claim gigabytes).
  Datum datum, decoded;
  const Datum& first = Parse(0, &datum, &decoded);
  const std::vector<int> item_shape = transformer_->OutputShape(first);  // every axis > 0
  const int64_t values = first.data().empty() ? first.float_data_size() : int64_t(first.data().size());
  const int64_t count = ValueCount(first.channels(), first.height(), first.width());  // -1: past int64
  CORTADO_REQUIRE(values == count, Describe(), ": ", RecordName(0), " has shape ", first.channels(), "×",
                  first.height(), "×", first.width(), " but holds ", values, " values instead of ",
                  count < 0 ? std::string("more than 2^63") : std::to_string(count));
  record_shape_ = {first.channels(), first.height(), first.width()};
  Source source;
  source.batch_size = static_cast<int>(dp.batch_size());
  source.rand_skip = dp.rand_skip();
  source.prefetch = static_cast<int>(dp.prefetch());
  source.threads = static_cast<int>(dp.threads());
  source.shuffle = dp.shuffle();
  source.item_shape = item_shape;
  return source;
}

void DataLayer::PrepareWorkers(int count) { scratch_.resize(count); }

std::string DataLayer::RecordName(uint64_t index) const {
  return "record '" + PrintableKey(records_->key(index)) + "' of " + records_->backend_name() + " '" +
         records_->path() + "'";
}

const Datum& DataLayer::Parse(uint64_t index, Datum* datum, Datum* decoded) const {
  const std::string_view value = records_->value(index);
  CORTADO_REQUIRE(datum->ParseFromArray(value.data(), static_cast<int>(value.size())), Describe(), ": ",
                  RecordName(index), " is not a Datum (corrupt database?)");
  if (!datum->encoded()) return *datum;
  const TransformationParameter& tp = param_.transform_param();
  CORTADO_REQUIRE(!(tp.force_color() && tp.force_gray()), Describe(),
                  ": transform_param force_color and force_gray exclude each other");
  const ColorMode mode = tp.force_color() || param_.data_param().force_encoded_color() ? ColorMode::kColor
                         : tp.force_gray()                                             ? ColorMode::kGray
                                                                                       : ColorMode::kKeep;
  try {
    DecodeDatum(*datum, mode, decoded);
  } catch (const Error& e) {
    Fail(Describe(), ": ", RecordName(index), ": ", e.what());
  }
  return *decoded;
}

void DataLayer::Load(uint64_t index, int worker, float* out, float* label, RecordRng& rng) {
  WorkerScratch& scratch = scratch_[worker];
  const Datum& datum = Parse(index, &scratch.datum, &scratch.decoded);
  // Resized records may differ in height and width (the crop fixes the output's), not in channels.
  const bool resizes = transformer_->resizes();
  CORTADO_REQUIRE(datum.channels() == record_shape_[0] &&
                      (resizes || (datum.height() == record_shape_[1] && datum.width() == record_shape_[2])),
                  Describe(), ": record '", PrintableKey(records_->key(index)), "' has shape ", datum.channels(), "×",
                  datum.height(), "×", datum.width(), " but the first record has ", record_shape_[0], "×",
                  record_shape_[1], "×", record_shape_[2],
                  resizes ? "; all records must have one number of channels" : "; all records must have one shape");
  try {
    transformer_->Transform(datum, out, rng);
  } catch (const Error& e) {
    Fail(e.what(), " (", RecordName(index), ")");
  }
  if (label != nullptr) *label = static_cast<float>(datum.label());
}

CORTADO_REGISTER_LAYER(Data, DataLayer);

}  // namespace cortado
