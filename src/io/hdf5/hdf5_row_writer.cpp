// hdf5_row_writer.cpp — the HDF5Output layer's writer, Hdf5RowWriter (declared in cortado/hdf5.hpp):
// one file kept open, float32 datasets created chunked with an unlimited axis 0 and extended by each
// Append, and a flush on request. Every call holds an hdf5::Session, so a failure is a cortado::Error
// naming the file with libhdf5's reason, and libhdf5 prints nothing.
#include <glog/logging.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "cortado/hdf5.hpp"
#include "hdf5_file.hpp"  // Session, Where, handles, ElementType

namespace cortado {

namespace {

// A chunk holds whole rows: at least the first append's rows, and at least kMinChunkBytes of them
// (a 1-float label row would otherwise make a chunk of a few bytes per forward), but at most
// kMaxChunkBytes (the size of libhdf5's default chunk cache) unless one row is larger.
constexpr hsize_t kMinChunkBytes = hsize_t{64} << 10;
constexpr hsize_t kMaxChunkBytes = hsize_t{1} << 20;

hsize_t ChunkRows(hsize_t first_rows, hsize_t row_bytes) {
  const hsize_t wanted = std::max(first_rows, kMinChunkBytes / row_bytes);
  return std::max<hsize_t>(1, std::min(wanted, kMaxChunkBytes / row_bytes));
}

// "3×2" for rows of dims N×3×2; "a single value" for those of N.
std::string RowText(const std::vector<hsize_t>& dims) {
  if (dims.size() <= 1) return "a single value";
  std::string text;
  for (size_t d = 1; d < dims.size(); ++d) text += (d > 1 ? "×" : "") + std::to_string(dims[d]);
  return text;
}

}  // namespace

struct Hdf5RowWriter::State {
  struct Dataset {
    hdf5::DatasetHandle handle;
    std::vector<hsize_t> dims;  // as in the file: rows written so far, then the row shape
  };
  std::string path;
  hdf5::FileHandle file;
  std::map<std::string, Dataset> datasets;  // after file, so destroyed (closed) before it
};

Hdf5RowWriter::Hdf5RowWriter(const std::string& path) : state_(std::make_unique<State>()) {
  state_->path = path;
  hdf5::Session session;
  const hdf5::Where where{"write", state_->path};
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path directory = fs::path(path).parent_path();
  if (!directory.empty() && !fs::is_directory(directory, ec))
    where.Fail("its directory '" + directory.string() + "' does not exist");
  if (fs::is_directory(path, ec)) where.Fail("it is a directory; give the path of a file");
  // An HDF5 file there (an earlier run's output) is replaced; any other file is someone's data.
  if (fs::exists(path, ec) && fs::file_size(path, ec) > 0 && H5Fis_hdf5(path.c_str()) <= 0)
    where.Fail("it exists and is not an HDF5 file, so it is not replaced; remove it or write elsewhere");
  const std::string what = "cannot create the file";
  const hdf5::PlistHandle access = hdf5::UnlockedFileAccess(what, where);  // others read it while it is open
  state_->file = hdf5::FileHandle(
      where.Check(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, access.get()), what));
}

Hdf5RowWriter::~Hdf5RowWriter() {
  if (!state_ || state_->file.get() < 0) return;
  hdf5::Session session;
  state_->datasets.clear();
  // Nothing left to lose when this fails: every Append the caller cared about was flushed.
  if (state_->file.CloseNow() < 0)
    LOG(WARNING) << "cannot close '" << state_->path << "': " << hdf5::TakeErrorReason();
}

void Hdf5RowWriter::Append(const std::string& name, const std::vector<int64_t>& dims, const float* values) {
  hdf5::Session session;
  const hdf5::Where where{"write", state_->path};
  const std::string full_name = "/" + name, what = "cannot append rows to dataset " + full_name;
  if (dims.empty()) where.Fail(what + ": a scalar has no rows");
  if (std::any_of(dims.begin(), dims.end(), [](int64_t d) { return d < 0; })) where.Fail(what + ": negative dims");
  const std::vector<hsize_t> rows(dims.begin(), dims.end());
  auto found = state_->datasets.find(name);
  if (found == state_->datasets.end()) {
    // Axis 0 starts empty and has no limit; the other axes are the rows' (a 0-long one unlimited too,
    // since a chunk is at least 1 long on every axis).
    std::vector<hsize_t> empty = rows, limit = rows, chunk = rows;
    empty[0] = 0;
    limit[0] = H5S_UNLIMITED;
    hsize_t row_bytes = sizeof(float);
    for (size_t d = 1; d < rows.size(); ++d) {
      if (rows[d] == 0) limit[d] = H5S_UNLIMITED;
      chunk[d] = std::max<hsize_t>(rows[d], 1);
      row_bytes *= chunk[d];
    }
    chunk[0] = ChunkRows(rows[0], row_bytes);
    const std::string create = "cannot create dataset " + full_name;
    const int rank = static_cast<int>(rows.size());
    hdf5::SpaceHandle space(where.Check(H5Screate_simple(rank, empty.data(), limit.data()), create));
    hdf5::PlistHandle layout(where.Check(H5Pcreate(H5P_DATASET_CREATE), create));
    where.Check(H5Pset_chunk(layout.get(), rank, chunk.data()), create);
    hdf5::DatasetHandle dataset(where.Check(H5Dcreate2(state_->file.get(), name.c_str(),
                                                       hdf5::ElementType<float>::file(), space.get(), H5P_DEFAULT,
                                                       layout.get(), H5P_DEFAULT),
                                            create));
    found = state_->datasets.emplace(name, State::Dataset{std::move(dataset), empty}).first;
  }
  State::Dataset& dataset = found->second;
  if (!std::equal(rows.begin() + 1, rows.end(), dataset.dims.begin() + 1, dataset.dims.end()))
    where.Fail(what + ": it holds rows of " + RowText(dataset.dims) + ", not of " + RowText(rows));
  if (rows[0] == 0) return;
  std::vector<hsize_t> grown = dataset.dims, start(rows.size(), 0);
  start[0] = dataset.dims[0];
  grown[0] += rows[0];
  where.Check(H5Dset_extent(dataset.handle.get(), grown.data()), what);
  dataset.dims = grown;  // from here on the file has the new rows, written or not
  hdf5::SpaceHandle in_file(where.Check(H5Dget_space(dataset.handle.get()), what));
  where.Check(H5Sselect_hyperslab(in_file.get(), H5S_SELECT_SET, start.data(), nullptr, rows.data(), nullptr), what);
  hdf5::SpaceHandle in_memory(
      where.Check(H5Screate_simple(static_cast<int>(rows.size()), rows.data(), nullptr), what));
  where.Check(H5Dwrite(dataset.handle.get(), hdf5::ElementType<float>::memory(), in_memory.get(), in_file.get(),
                       H5P_DEFAULT, values),
              what);
}

void Hdf5RowWriter::Flush() {
  hdf5::Session session;
  const hdf5::Where where{"write", state_->path};
  where.Check(H5Fflush(state_->file.get(), H5F_SCOPE_LOCAL), "cannot flush the file");
}

}  // namespace cortado
