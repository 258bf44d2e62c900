// data.cpp — the Data layer: LMDB records → transformed batches, read ahead by one prefetch thread.
//
// A ring of `prefetch` host batches, allocated once in LayerSetUp, circulates between two queues:
// the thread pops a free batch, fills it and pushes it to `full`; Forward pops a full batch, copies
// it into the tops and pushes it back to `free`. An error in the thread is kept and rethrown by Forward.
#include <glog/logging.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "cortado/data.hpp"
#include "cortado/error.hpp"
#include "cortado/layer_registry.hpp"

namespace cortado {

namespace {

struct Batch {
  std::vector<float> data;
  std::vector<float> label;
};

// A blocking queue of at most `capacity` batches (a fixed ring: no allocation after construction).
// Close() wakes every waiter; Pop then returns false once the queue is empty.
class BatchQueue {
 public:
  explicit BatchQueue(size_t capacity) : slots_(capacity) {}

  void Push(Batch* batch) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      CHECK_LT(size_, slots_.size()) << "batch queue overflow";
      slots_[(head_ + size_++) % slots_.size()] = batch;
    }
    ready_.notify_one();
  }

  bool Pop(Batch** batch) {
    std::unique_lock<std::mutex> lock(mutex_);
    ready_.wait(lock, [this] { return size_ > 0 || closed_; });
    if (size_ == 0) return false;
    *batch = slots_[head_];
    head_ = (head_ + 1) % slots_.size();
    --size_;
    return true;
  }

  void Close() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      closed_ = true;
    }
    ready_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::vector<Batch*> slots_;
  size_t head_ = 0, size_ = 0;
  bool closed_ = false;
};

}  // namespace

struct DataLayer::Prefetcher {
  Prefetcher(const LayerParameter& param, const std::string& owner, int prefetch)
      : owner(owner),
        cursor(param.data_param().source(), owner),
        transformer(param.transform_param(), param.phase(), owner),
        ring(prefetch),
        free(prefetch),
        full(prefetch) {}

  ~Prefetcher() {
    stop = true;
    free.Close();
    full.Close();
    if (thread.joinable()) thread.join();
  }

  // Parses the record under the cursor into `datum`.
  void ParseCurrent() {
    const std::string_view value = cursor.value();
    CORTADO_REQUIRE(datum.ParseFromArray(value.data(), static_cast<int>(value.size())), owner,
                    ": record '", cursor.key(), "' of LMDB '", cursor.path(),
                    "' is not a Datum (corrupt database?)");
  }

  void Fill(Batch* batch) {
    const int64_t item = int64_t(item_shape[0]) * item_shape[1] * item_shape[2];
    for (int i = 0; i < batch_size && !stop; ++i) {
      ParseCurrent();
      CORTADO_REQUIRE(datum.channels() == record_shape[0] && datum.height() == record_shape[1] &&
                          datum.width() == record_shape[2],
                      owner, ": record '", cursor.key(), "' has shape ", datum.channels(), "×",
                      datum.height(), "×", datum.width(), " but the first record has ", record_shape[0],
                      "×", record_shape[1], "×", record_shape[2], "; all records must have one shape");
      transformer.Transform(datum, batch->data.data() + i * item, rng);
      if (!batch->label.empty()) batch->label[i] = static_cast<float>(datum.label());
      cursor.Next();
    }
  }

  void Run() {
    try {
      Batch* batch;
      while (free.Pop(&batch)) {
        Fill(batch);
        if (stop) return;
        full.Push(batch);
      }
    } catch (const std::exception& e) {
      error = e.what();  // published to Forward by full.Close() (same mutex)
      full.Close();
    }
  }

  std::string owner;
  LmdbCursor cursor;
  DataTransformer transformer;
  std::mt19937 rng;
  Datum datum;  // reused for every record
  int batch_size = 0;
  std::vector<int> record_shape, item_shape;  // C×H×W stored, C×H'×W' produced
  std::vector<Batch> ring;
  BatchQueue free, full;
  std::string error;
  std::atomic<bool> stop{false};
  std::thread thread;
};

DataLayer::DataLayer(const LayerParameter& param, Context& ctx) : Layer(param, ctx) {}

DataLayer::~DataLayer() = default;

void DataLayer::LayerSetUp(const BlobVec& bottom, const BlobVec& top) {
  prefetcher_.reset();
  const DataParameter& dp = param_.data_param();
  CORTADO_REQUIRE(dp.backend() == DataParameter::LMDB, Describe(),
                  ": LEVELDB is not supported; convert the dataset to LMDB "
                  "(convert_imageset/convert_mnist_data --backend=lmdb) and set backend: LMDB");
  CORTADO_REQUIRE(!dp.source().empty(), Describe(), ": data_param.source is empty; give the LMDB directory");
  CORTADO_REQUIRE(dp.batch_size() > 0, Describe(), ": data_param.batch_size must be positive");
  CORTADO_REQUIRE(dp.prefetch() > 0, Describe(), ": data_param.prefetch must be positive");
  CORTADO_REQUIRE(!dp.has_scale() && !dp.has_mean_file() && !dp.has_crop_size() && !dp.has_mirror(),
                  Describe(), ": data_param.scale/mean_file/crop_size/mirror are legacy; "
                  "move them to transform_param");
  CORTADO_REQUIRE(!dp.shuffle(), Describe(), ": data_param.shuffle is not supported yet");

  prefetcher_ = std::make_unique<Prefetcher>(param_, Describe(), static_cast<int>(dp.prefetch()));
  Prefetcher& p = *prefetcher_;
  records_skipped_ = 0;
  records_consumed_ = 0;
  if (dp.rand_skip() > 0) {
    records_skipped_ = ctx_.rng()() % dp.rand_skip();
    LOG(INFO) << "Skipping first " << records_skipped_ << " data points.";
    for (uint64_t i = 0; i < records_skipped_; ++i) p.cursor.Next();
  }
  // The first record (not consumed) gives the shape of every record.
  p.ParseCurrent();
  p.record_shape = {p.datum.channels(), p.datum.height(), p.datum.width()};
  p.item_shape = p.transformer.OutputShape(p.datum);
  p.batch_size = static_cast<int>(dp.batch_size());
  data_shape_ = {p.batch_size, p.item_shape[0], p.item_shape[1], p.item_shape[2]};
  LOG(INFO) << "output data size: " << data_shape_[0] << "," << data_shape_[1] << ","
            << data_shape_[2] << "," << data_shape_[3];

  const int64_t item = int64_t(p.item_shape[0]) * p.item_shape[1] * p.item_shape[2];
  for (Batch& batch : p.ring) {
    batch.data.resize(item * p.batch_size);
    if (top.size() > 1) batch.label.resize(p.batch_size);
    p.free.Push(&batch);
  }
  p.rng.seed(ctx_.rng()());
  p.thread = std::thread([&p] { p.Run(); });
}

void DataLayer::Reshape(const BlobVec& bottom, const BlobVec& top) {
  top[0]->Reshape(data_shape_);
  if (top.size() > 1) top[1]->Reshape(std::vector<int>{data_shape_[0]});
}

void DataLayer::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  CHECK(prefetcher_) << Describe() << ": Forward before SetUp";
  Prefetcher& p = *prefetcher_;
  Batch* batch = nullptr;
  if (!p.full.Pop(&batch)) Fail(p.error.empty() ? Describe() + ": the prefetch thread stopped" : p.error);
  std::copy(batch->data.begin(), batch->data.end(), top[0]->data());
  if (top.size() > 1) std::copy(batch->label.begin(), batch->label.end(), top[1]->data());
  p.free.Push(batch);
  records_consumed_ += static_cast<uint64_t>(p.batch_size);
}

CORTADO_REGISTER_LAYER(Data, DataLayer);

}  // namespace cortado
