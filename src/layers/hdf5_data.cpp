// hdf5_data.cpp — HDF5Data: rows of HDF5 files, batch_size at a time, as Caffe's HDF5Data layer.
// hdf5_data_param: source (a text file naming one .h5 file per line; blank lines are skipped and a
// relative path is relative to the working directory, as in Caffe), batch_size, shuffle.
// Top i is the dataset /<name of top i> of every file: rank >= 1, any integer or float type, read as
// float. Axis 0 counts a file's rows and is the same for all its datasets; the other axes are the
// per-row shape, the same in every file. Top i: (batch_size, per-row shape of dataset i).
// One file is in memory at a time, read whole when the reader reaches it (cortado/hdf5.hpp). Forward
// copies the next batch_size rows, going on to the next file at the end of one and back to the first
// after the last. shuffle: a new file order each pass and a new row order each time a file is read
// (each pass when there is one file), from a generator seeded from the context's, so a fixed
// random_seed repeats runs. No bottoms, no backward; without libhdf5, an Error at setup. On a GPU net
// the rows go into a BatchUploader's pinned staging buffers, copied to the tops through its device
// staging slots (scratch blobs of this layer) while the step before still runs (batch_uploader.hpp).
#include <glog/logging.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <numeric>
#include <random>
#include <utility>
#include <vector>

#include "cortado/data/batch_uploader.hpp"
#include "cortado/error.hpp"
#include "cortado/gpu.hpp"   // BuiltWithCuda
#include "cortado/hdf5.hpp"  // HaveHdf5Support, ReadHdf5Datasets
#include "cortado/io.hpp"    // FileExists
#include "cortado/layer_registry.hpp"

namespace cortado {

namespace {

// "shape 3×2" for the rows of a dataset of dims N×3×2; "a single value" for those of a 1-D dataset.
std::string RowShapeText(const std::vector<int64_t>& dims) {
  if (dims.size() <= 1) return "a single value";
  std::string text = "shape ";
  for (size_t d = 1; d < dims.size(); ++d) text += (d > 1 ? "×" : "") + std::to_string(dims[d]);
  return text;
}

class HDF5DataLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "HDF5Data"; }
  int ExactNumBottomBlobs() const override { return 0; }
  int MinTopBlobs() const override { return 1; }
  bool BackwardReadsTopData(int) const override { return false; }

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override;
  void Reshape(const BlobVec&, const BlobVec& top) override {
    for (size_t i = 0; i < top.size(); ++i) top[i]->Reshape(top_shapes_[i]);
    if (uploader_) uploader_->Reshape(top);
  }

  // Exact resume: the rows handed out since setup and the shuffle seed. Restoring replays the file
  // and row orders from the seed and skips that many rows, reading only the file it ends in (the
  // row counts of the files it skips are known from this run or read again once).
  bool HasReader() const override { return true; }
  ReaderState reader_state() const override { return {position_, seed_}; }
  void RestoreReaderState(const ReaderState& state) override;

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_cpu(const BlobVec&, const std::vector<bool>&, const BlobVec&) override {}
  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_gpu(const BlobVec&, const std::vector<bool>&, const BlobVec&) override {}

 private:
  void ReadList(const std::string& path);
  // Reads files_[file_order_[position]] whole, checks it against the first file, and orders its rows.
  // While skip_reading_ is set, a file whose row count is known is only ordered, not read.
  void Load(size_t position);
  void Read(size_t file_index);
  void OrderRows(int64_t rows);
  // The first pass's file order, from the seed (setup and restore).
  void Start();
  // Steps to the next row: at the end of a file, to the next file; after the last, back to the first.
  void Advance();
  // Steps over `rows` rows without copying them (data parallel: the other ranks' blocks), reading
  // only the file it ends in.
  void SkipRows(int64_t rows);
  // Copies the next batch_size rows into out[i] (host memory, one per top) and advances.
  void NextBatch(const std::vector<float*>& out);

  int batch_size_ = 0;
  bool shuffle_ = false;
  std::mt19937 rng_;                // file and row orders (shuffle only)
  std::vector<std::string> names_;  // dataset of each top
  std::vector<std::string> files_;  // as listed
  std::vector<size_t> file_order_;  // this pass's order of files_
  size_t file_ = 0;                 // position in file_order_ of the file in memory

  std::vector<std::vector<int64_t>> first_dims_;  // the first file read: dims of each dataset
  std::string first_path_;
  std::vector<std::vector<int>> top_shapes_;
  std::vector<int64_t> row_size_;  // values per row, per top

  uint64_t seed_ = 0;          // of rng_ (shuffle only)
  uint64_t position_ = 0;      // rows handed out since setup
  std::vector<int64_t> file_rows_;  // rows of each listed file; -1 until read
  bool skip_reading_ = false;  // restoring: order the rows of files passed over without reading them
  size_t read_file_ = SIZE_MAX;  // index in files_ of the file in datasets_

  std::vector<Hdf5Dataset> datasets_;  // the file in memory, one per top
  std::vector<int64_t> row_order_;     // its rows in the order Forward hands them out
  size_t row_ = 0;                     // position in row_order_ of the next row
  std::unique_ptr<BatchUploader> uploader_;  // GPU nets only
};

void HDF5DataLayer::LayerSetUp(const BlobVec&, const BlobVec& top) {
  const HDF5DataParameter& p = param_.hdf5_data_param();
  CORTADO_REQUIRE(HaveHdf5Support(), Describe(), ": this build of Cortado has no HDF5 support; rebuild with "
                  "libhdf5-dev installed (scripts/install_deps.sh)");
  CORTADO_REQUIRE(!p.source().empty(), Describe(), ": hdf5_data_param.source is empty; give the list of .h5 files");
  CORTADO_REQUIRE(p.batch_size() > 0 && p.batch_size() <= INT_MAX, Describe(), ": hdf5_data_param.batch_size is ",
                  p.batch_size(), "; give a positive number of rows per batch");
  CORTADO_REQUIRE(param_.top_size() == static_cast<int>(top.size()), Describe(),
                  ": each top names the dataset it reads; give every top a name");
  batch_size_ = static_cast<int>(p.batch_size());
  shuffle_ = p.shuffle();
  names_.assign(param_.top().begin(), param_.top().end());
  first_dims_.clear();
  top_shapes_.clear();
  row_size_.clear();
  ReadList(p.source());
  seed_ = shuffle_ ? ctx_.rng()() : 0;
  position_ = 0;
  Start();
  uploader_.reset();
  if (ctx_.device() == Device::kGPU) {
    std::vector<int64_t> floats;
    for (int64_t size : row_size_) floats.push_back(size * batch_size_);
    uploader_ = std::make_unique<BatchUploader>(ctx_, floats, [this] { return AddScratch(); });
  }
}

void HDF5DataLayer::Start() {
  rng_.seed(static_cast<std::mt19937::result_type>(seed_));
  file_order_.resize(files_.size());
  std::iota(file_order_.begin(), file_order_.end(), 0);
  if (shuffle_) std::shuffle(file_order_.begin(), file_order_.end(), rng_);
  file_ = 0;
  Load(0);
}

void HDF5DataLayer::RestoreReaderState(const ReaderState& state) {
  seed_ = state.seed;
  skip_reading_ = true;
  Start();
  for (uint64_t row = 0; row < state.position; ++row) Advance();
  skip_reading_ = false;
  if (read_file_ != file_order_[file_]) Read(file_order_[file_]);  // keeps the replayed row order
  position_ = state.position;
}

void HDF5DataLayer::ReadList(const std::string& path) {
  std::ifstream in(path);
  CORTADO_REQUIRE(in.good(), Describe(), ": cannot read the list of HDF5 files '", path, "'");
  LOG(INFO) << "Loading list of HDF5 filenames from: " << path;
  files_.clear();
  file_rows_.clear();
  read_file_ = SIZE_MAX;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const size_t begin = line.find_first_not_of(" \t\r");
    if (begin == std::string::npos) continue;
    const std::string file = line.substr(begin, line.find_last_not_of(" \t\r") + 1 - begin);
    CORTADO_REQUIRE(FileExists(file), Describe(), ": ", path, ":", number, ": no such file '", file, "'");
    files_.push_back(file);
    file_rows_.push_back(-1);
  }
  CORTADO_REQUIRE(!files_.empty(), Describe(), ": the list '", path, "' names no HDF5 files");
  LOG(INFO) << "Number of HDF5 files: " << files_.size();
}

void HDF5DataLayer::Load(size_t position) {
  const size_t index = file_order_[position];
  if (!(skip_reading_ && file_rows_[index] >= 0)) Read(index);
  OrderRows(file_rows_[index]);
}

void HDF5DataLayer::OrderRows(int64_t rows) {
  row_order_.resize(static_cast<size_t>(rows));
  std::iota(row_order_.begin(), row_order_.end(), 0);
  if (shuffle_) std::shuffle(row_order_.begin(), row_order_.end(), rng_);
  row_ = 0;
}

void HDF5DataLayer::Read(size_t file_index) {
  const std::string& path = files_[file_index];
  DLOG(INFO) << "Loading HDF5 file: " << path;
  std::vector<Hdf5Dataset> datasets;
  try {
    datasets = ReadHdf5Datasets(path, names_);
  } catch (const Error& e) {
    Fail(Describe(), ": ", e.what());
  }
  const bool first = first_dims_.empty();
  for (size_t i = 0; i < names_.size(); ++i) {
    const std::vector<int64_t>& dims = datasets[i].dims;
    const std::string dataset = "'" + path + "': /" + names_[i];
    CORTADO_REQUIRE(!dims.empty(), Describe(), ": ", dataset, " is a scalar; HDF5Data needs its rows along axis 0");
    CORTADO_REQUIRE(dims[0] > 0, Describe(), ": ", dataset, " has no rows");
    // Rows never outnumber values (OrderRows allocates one index per row): every per-row axis is
    // positive and the values are all the dims' product, which libhdf5 could wrap.
    for (size_t d = 1; d < dims.size(); ++d)
      CORTADO_REQUIRE(dims[d] > 0, Describe(), ": ", dataset, " has ", dims[0], " rows of ", RowShapeText(dims),
                      "; every axis must be positive");
    uint64_t product = 1;
    bool fits = true;
    for (int64_t dim : dims) fits = fits && !__builtin_mul_overflow(product, static_cast<uint64_t>(dim), &product);
    CORTADO_REQUIRE(fits && product == datasets[i].values.size(), Describe(), ": ", dataset, " has ", dims[0],
                    " rows of ", RowShapeText(dims), " but holds ", datasets[i].values.size(),
                    " values (a damaged HDF5 file?)");
    CORTADO_REQUIRE(dims[0] == datasets[0].dims[0], Describe(), ": ", dataset, " has ", dims[0], " rows but /",
                    names_[0], " has ", datasets[0].dims[0], "; every dataset of a file needs the same number "
                    "of rows (axis 0)");
    if (!first)
      CORTADO_REQUIRE(std::equal(dims.begin() + 1, dims.end(), first_dims_[i].begin() + 1, first_dims_[i].end()),
                      Describe(), ": ", dataset, " has rows of ", RowShapeText(dims), " but in '", first_path_,
                      "' its rows have ", RowShapeText(first_dims_[i]), "; every file needs the same per-row shape");
  }
  if (first) {
    first_path_ = path;
    for (size_t i = 0; i < names_.size(); ++i) {
      const std::vector<int64_t>& dims = datasets[i].dims;
      std::vector<int> shape = {batch_size_};
      for (size_t d = 1; d < dims.size(); ++d) {
        CORTADO_REQUIRE(dims[d] <= INT_MAX, Describe(), ": '", path, "': /", names_[i], " has axis ", d, " of ",
                        dims[d], ", too large for a blob");
        shape.push_back(static_cast<int>(dims[d]));
      }
      first_dims_.push_back(dims);
      row_size_.push_back(static_cast<int64_t>(datasets[i].values.size()) / dims[0]);
      top_shapes_.push_back(shape);
    }
  }
  datasets_ = std::move(datasets);
  file_rows_[file_index] = datasets_[0].dims[0];
  read_file_ = file_index;
  DLOG(INFO) << "Successfully loaded " << file_rows_[file_index] << " rows";
}

void HDF5DataLayer::Advance() {
  if (++row_ < row_order_.size()) return;
  if (++file_ == file_order_.size()) {
    file_ = 0;
    if (shuffle_) std::shuffle(file_order_.begin(), file_order_.end(), rng_);
    DLOG(INFO) << "Looping around to first file.";
  }
  if (files_.size() > 1) {
    Load(file_);
  } else {
    row_ = 0;
    if (shuffle_) std::shuffle(row_order_.begin(), row_order_.end(), rng_);
  }
}

void HDF5DataLayer::SkipRows(int64_t rows) {
  if (rows <= 0) return;
  skip_reading_ = true;
  for (int64_t row = 0; row < rows; ++row) Advance();
  skip_reading_ = false;
  if (read_file_ != file_order_[file_]) Read(file_order_[file_]);
}

// Data-parallel training (TRAIN nets): rank r of N takes rows [r·B, (r+1)·B) of every N·B, so the ranks
// together read what one layer of batch N·B reads; position_ counts the rows of every rank.
void HDF5DataLayer::NextBatch(const std::vector<float*>& out) {
  const int rank = phase() == TRAIN ? ctx_.rank() : 0, ranks = phase() == TRAIN ? ctx_.ranks() : 1;
  position_ += static_cast<uint64_t>(batch_size_) * ranks;
  SkipRows(int64_t{rank} * batch_size_);
  for (int n = 0; n < batch_size_; ++n) {
    const int64_t row = row_order_[row_];
    for (size_t i = 0; i < out.size(); ++i) {
      const int64_t size = row_size_[i];
      std::memcpy(out[i] + n * size, datasets_[i].values.data() + row * size, size * sizeof(float));
    }
    Advance();
  }
  SkipRows(int64_t{ranks - 1 - rank} * batch_size_);
}

void HDF5DataLayer::Forward_cpu(const BlobVec&, const BlobVec& top) {
  std::vector<float*> out;
  for (Blob* blob : top) out.push_back(blob->data());
  NextBatch(out);
}

void HDF5DataLayer::Forward_gpu(const BlobVec&, const BlobVec& top) {
  NextBatch(uploader_->Stage());
  uploader_->Upload(top);
}

}  // namespace

CORTADO_REGISTER_LAYER(HDF5Data, HDF5DataLayer);

}  // namespace cortado
