// memory_data.hpp — MemoryData: batches served from arrays the caller holds in memory (Caffe's
// MemoryDataLayer; pycaffe's Net.set_input_arrays).
//
// No bottoms; two tops: data (batch_size × channels × height × width) and label (batch_size), shapes
// from memory_data_param { batch_size channels height width }, each positive. The caller hands the
// layer n items with Reset(data, labels, n): data is n·channels·height·width floats, item after item,
// labels n floats; n must be a positive multiple of batch_size. The layer keeps the pointers, not a
// copy (like Caffe): the arrays must stay alive and unchanged in size until the next Reset or the
// layer's end (the Python binding keeps its numpy arrays alive). Each Forward copies the next
// batch_size items into the tops (a GPU net: host → device on the compute stream, waiting for the copy,
// so the arrays may change after Forward returns) and advances by batch_size, back to the start after
// n items. Forward before any Reset is an Error naming the layer. Backward does nothing.
//
// transform_param is accepted and not applied to the arrays (as Caffe, which applies it only to Datums
// added one by one); setup logs a warning when a prototxt sets it.
//
// set_batch_size(b) serves batches of b items from the next Forward on, starting again at the first
// item: b may not exceed the batch_size the net was planned with (its memory), a smaller b reshapes
// the tops at that Forward and the layers after them follow. The items given to Reset must be a
// multiple of the batch size in force at each Forward (else an Error: call Reset again).
#pragma once

#include <cstdint>
#include <vector>

#include "cortado/layer.hpp"

namespace cortado {

class MemoryDataLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "MemoryData"; }
  bool IsCapturable() const override { return false; }  // reads the caller's arrays on the host
  // GPU nets: the labels are on the host before their upload, so they are checked there.
  bool CanCheckLabels() const override { return true; }
  // After set_batch_size: the tops take the new batch size at the next Forward (and, while it is below
  // the planned one, the layers after this one are reshaped on every pass).
  bool ReshapesTopsInForward() const override;
  int ExactNumBottomBlobs() const override { return 0; }
  int ExactNumTopBlobs() const override { return 2; }
  bool BackwardReadsTopData(int) const override { return false; }

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override;
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;

  // Serves `n` items from `data` (n·channels·height·width floats) and `labels` (n floats), from the
  // first. Keeps the pointers. Error (naming the layer) when either is null or n is not a positive
  // multiple of batch_size().
  void Reset(const float* data, const float* labels, int n);
  // Serves batches of `batch_size` items from the next Forward on, from the first item. Error when
  // batch_size is not positive or exceeds the batch size the net was planned with.
  void set_batch_size(int batch_size);

  int batch_size() const { return batch_size_; }
  int channels() const { return channels_; }
  int height() const { return height_; }
  int width() const { return width_; }
  bool has_data() const { return data_ != nullptr; }
  int position() const { return pos_; }  // the first item of the next batch

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_cpu(const BlobVec&, const std::vector<bool>&, const BlobVec&) override {}
  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_gpu(const BlobVec&, const std::vector<bool>&, const BlobVec&) override {}

 private:
  // Checks that there is data to serve and gives the tops the current batch size (no allocation).
  void PrepareTops(const BlobVec& top);
  int64_t item_size() const { return int64_t{channels_} * height_ * width_; }

  int batch_size_ = 0;
  int planned_batch_size_ = 0;  // memory_data_param's: the tops' capacity
  int served_batch_size_ = 0;   // the tops' batch size, as last reshaped
  int channels_ = 0, height_ = 0, width_ = 0;
  std::vector<int> data_shape_;       // {batch_size, channels, height, width}
  std::vector<int> label_shape_;      // {batch_size}
  const float* data_ = nullptr;       // the caller's arrays (Reset)
  const float* labels_ = nullptr;
  int n_ = 0;
  int pos_ = 0;
};

}  // namespace cortado
