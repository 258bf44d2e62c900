// hdf5_output.cpp — HDF5Output: writes its two bottoms to an HDF5 file, as Caffe's HDF5Output layer,
// except that every forward appends to the file where Caffe's can write only one batch.
// hdf5_output_param.file_name: the file, created at setup (an HDF5 file there is replaced, any other
// file is refused; its directory must exist). Bottom 0 goes to the float32 dataset /data, bottom 1 to /label, in Caffe's layout: a
// bottom of fewer than 4 axes is written with trailing axes of 1 up to 4 (N×D → N×D×1×1), as Caffe's
// legacy num/channels/height/width shape; one of more axes keeps its shape. Axis 0 counts the rows of
// every forward so far: after k forwards of N rows, /data is (k·N, ...). The bottoms have the same
// number of rows; the shape of a row is fixed by the first forward. The file is flushed after each
// forward, so that it is complete for other readers (the HDF5Data layer, h5py) while the net runs,
// and closed with the layer (cortado/hdf5.hpp, Hdf5RowWriter). No tops; no gradient (Backward zeroes
// the diffs of the bottoms that ask for one). On a GPU net the bottoms are copied to the host
// (Blob::ReadData waits for the GPU), so the layer is never captured in a CUDA graph. A plan-only
// context creates no file.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "cortado/error.hpp"
#include "cortado/gpu.hpp"   // BuiltWithCuda
#include "cortado/hdf5.hpp"  // HaveHdf5Support, Hdf5RowWriter
#include "cortado/layer_registry.hpp"
#include "cortado/math.hpp"      // cpu_set
#include "cortado/math_gpu.hpp"  // gpu_set

namespace cortado {

namespace {

const char* const kDatasets[] = {"data", "label"};  // bottom i's dataset

// "3×2" for the rows of a blob of shape N×3×2; "a single value" for those of a 1-axis blob.
std::string RowText(const std::vector<int>& row) {
  if (row.empty()) return "a single value";
  std::string text;
  for (size_t d = 0; d < row.size(); ++d) text += (d > 0 ? "×" : "") + std::to_string(row[d]);
  return text;
}

class HDF5OutputLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "HDF5Output"; }
  int ExactNumBottomBlobs() const override { return 2; }
  int ExactNumTopBlobs() const override { return 0; }
  bool IsCapturable() const override { return false; }  // reads its bottoms on the host
  bool BackwardReadsBottomData(int) const override { return false; }
  bool BackwardReadsTopData(int) const override { return false; }

  void LayerSetUp(const BlobVec&, const BlobVec&) override {
    const std::string& file = param_.hdf5_output_param().file_name();
    CORTADO_REQUIRE(HaveHdf5Support(), Describe(), ": this build of Cortado has no HDF5 support; rebuild with "
                    "libhdf5-dev installed (scripts/install_deps.sh)");
    CORTADO_REQUIRE(!file.empty(), Describe(), ": hdf5_output_param.file_name is empty; give the .h5 file to write");
    row_shapes_.clear();
    writer_.reset();
    if (ctx_.plan_only()) return;
    try {
      writer_ = std::make_unique<Hdf5RowWriter>(file);
    } catch (const Error& e) {
      Fail(Describe(), ": ", e.what());
    }
  }

  void Reshape(const BlobVec& bottom, const BlobVec&) override {
    for (int i = 0; i < 2; ++i)
      CORTADO_REQUIRE(bottom[i]->num_axes() >= 1, Describe(), ": bottom ", i, " (/", kDatasets[i],
                      ") is a scalar; its rows (axis 0) are what the layer writes");
    CORTADO_REQUIRE(bottom[0]->shape(0) == bottom[1]->shape(0), Describe(), ": bottom 0 (/data) has ",
                    bottom[0]->shape(0), " rows but bottom 1 (/label) has ", bottom[1]->shape(0),
                    "; give both the same number of rows (axis 0)");
  }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec&) override {
    Write(bottom, {bottom[0]->data(), bottom[1]->data()});
  }
  void Forward_gpu(const BlobVec& bottom, const BlobVec&) override {
    const std::vector<float> data = bottom[0]->ReadData(), label = bottom[1]->ReadData();
    Write(bottom, {data.data(), label.data()});
  }
  void Backward_cpu(const BlobVec&, const std::vector<bool>& propagate_down, const BlobVec& bottom) override {
    for (int i = 0; i < 2; ++i)
      if (propagate_down[i]) cpu_set(bottom[i]->count(), 0.0f, bottom[i]->diff());
  }
  void Backward_gpu(const BlobVec&, const std::vector<bool>& propagate_down, const BlobVec& bottom) override {
    for (int i = 0; i < 2; ++i)
      if (propagate_down[i]) gpu_set(ctx_, bottom[i]->count(), 0.0f, bottom[i]->diff());
  }

 private:
  // Appends the bottoms' rows (values: host copies of their data) to /data and /label and flushes.
  // A row shape other than the first forward's is refused before either dataset is touched.
  void Write(const BlobVec& bottom, const std::vector<const float*>& values) {
    CORTADO_REQUIRE(writer_ != nullptr, Describe(), ": the net was built for planning only and has no file to write");
    std::vector<std::vector<int64_t>> dims;  // Caffe's layout: at least 4 axes
    std::vector<std::vector<int>> rows;
    for (int i = 0; i < 2; ++i) {
      dims.emplace_back(bottom[i]->shape().begin(), bottom[i]->shape().end());
      dims[i].resize(std::max<size_t>(dims[i].size(), 4), 1);
      rows.emplace_back(dims[i].begin() + 1, dims[i].end());
    }
    for (int i = 0; i < 2 && !row_shapes_.empty(); ++i)
      CORTADO_REQUIRE(rows[i] == row_shapes_[i], Describe(), ": bottom ", i, " (/", kDatasets[i], ") has rows of ",
                      RowText(rows[i]), " but earlier forwards wrote rows of ", RowText(row_shapes_[i]),
                      " to '", param_.hdf5_output_param().file_name(),
                      "'; only the number of rows (axis 0) may change between forwards");
    try {
      for (int i = 0; i < 2; ++i) writer_->Append(kDatasets[i], dims[i], values[i]);
      writer_->Flush();
    } catch (const Error& e) {
      Fail(Describe(), ": ", e.what());
    }
    row_shapes_ = rows;
  }

  std::unique_ptr<Hdf5RowWriter> writer_;  // the open file (null in a plan-only context)
  std::vector<std::vector<int>> row_shapes_;  // per bottom, fixed by the first forward; empty before
};

}  // namespace

CORTADO_REGISTER_LAYER(HDF5Output, HDF5OutputLayer);

}  // namespace cortado
