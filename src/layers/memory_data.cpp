// memory_data.cpp — MemoryData (memory_data.hpp): batches from the caller's arrays, in order, wrapping
// around. The CPU copies each batch with memcpy; a GPU net uploads it on the compute stream and waits
// (UploadAndWait, the DummyData helper: dummy_data_gpu.hpp), its labels checked on the host first.
#include "cortado/memory_data.hpp"

#include <glog/logging.h>

#include <climits>
#include <cstring>
#include <string>

#include "cortado/error.hpp"
#include "cortado/layer_registry.hpp"
#include "cortado/math.hpp"
#include "cortado/math_gpu.hpp"
#include "dummy_data_gpu.hpp"  // UploadAndWait

namespace cortado {

bool MemoryDataLayer::ReshapesTopsInForward() const {
  return batch_size_ != planned_batch_size_ || batch_size_ != served_batch_size_;
}

void MemoryDataLayer::LayerSetUp(const BlobVec&, const BlobVec&) {
  const MemoryDataParameter& p = param_.memory_data_param();
  auto dim = [&](uint32_t value, const char* field) {
    CORTADO_REQUIRE(value > 0 && value <= INT_MAX, Describe(), ": memory_data_param ", field, " is ", value,
                    "; batch_size, channels, height and width must be given, between 1 and ", INT_MAX);
    return static_cast<int>(value);
  };
  batch_size_ = planned_batch_size_ = dim(p.batch_size(), "batch_size");
  channels_ = dim(p.channels(), "channels");
  height_ = dim(p.height(), "height");
  width_ = dim(p.width(), "width");
  data_shape_ = {batch_size_, channels_, height_, width_};
  label_shape_ = {batch_size_};

  // As Caffe: transform_param applies to Datums added one by one (which Cortado's MemoryData does not
  // take), never to the arrays given to Reset; a prototxt that sets it still runs, with a warning.
  if (param_.has_transform_param())
    LOG(WARNING) << Describe() << ": transform_param is not applied to the arrays given to Reset "
                 << "(set_input_arrays), as in Caffe: transform them before";
}

void MemoryDataLayer::Reshape(const BlobVec&, const BlobVec& top) {
  top[0]->Reshape(data_shape_);
  top[1]->Reshape(label_shape_);
  served_batch_size_ = batch_size_;
}

void MemoryDataLayer::Reset(const float* data, const float* labels, int n) {
  CORTADO_REQUIRE(batch_size_ > 0, Describe(), ": Reset before the layer is set up");
  CORTADO_REQUIRE(data != nullptr && labels != nullptr, Describe(),
                  ": Reset needs both a data and a label array");
  CORTADO_REQUIRE(n > 0 && n % batch_size_ == 0, Describe(), ": Reset got ", n,
                  " items; their number must be a positive multiple of the batch size ", batch_size_);
  data_ = data;
  labels_ = labels;
  n_ = n;
  pos_ = 0;
}

void MemoryDataLayer::set_batch_size(int batch_size) {
  CORTADO_REQUIRE(planned_batch_size_ > 0, Describe(), ": set_batch_size before the layer is set up");
  CORTADO_REQUIRE(batch_size > 0 && batch_size <= planned_batch_size_, Describe(), ": set_batch_size(",
                  batch_size, "): the batch size must be between 1 and ", planned_batch_size_,
                  ", the memory_data_param batch_size the net was planned with");
  if (batch_size == batch_size_) return;
  batch_size_ = batch_size;
  data_shape_[0] = batch_size;  // the same sizes: no allocation
  label_shape_[0] = batch_size;
  pos_ = 0;
}

void MemoryDataLayer::PrepareTops(const BlobVec& top) {
  CORTADO_REQUIRE(data_ != nullptr, Describe(), ": no data: call set_input_arrays (Reset) first");
  CORTADO_REQUIRE(n_ % batch_size_ == 0, Describe(), ": the ", n_, " items given to Reset are not a multiple "
                  "of the batch size ", batch_size_, " set by set_batch_size; call Reset again");
  CHECK_LE(pos_ + batch_size_, n_) << Describe() << ": position " << pos_ << " past the data";
  if (served_batch_size_ != batch_size_ || top[0]->shape(0) != batch_size_) {  // within the planned capacity
    top[0]->Reshape(data_shape_);
    top[1]->Reshape(label_shape_);
    served_batch_size_ = batch_size_;
  }
}

void MemoryDataLayer::Forward_cpu(const BlobVec&, const BlobVec& top) {
  PrepareTops(top);
  const int64_t count = int64_t{batch_size_} * item_size();
  const float* data = data_ + int64_t{pos_} * item_size();
  std::memcpy(top[0]->data(), data, static_cast<size_t>(count) * sizeof(float));
  std::memcpy(top[1]->data(), labels_ + pos_, static_cast<size_t>(batch_size_) * sizeof(float));
  pos_ = (pos_ + batch_size_) % n_;
}

void MemoryDataLayer::Forward_gpu(const BlobVec&, const BlobVec& top) {
  PrepareTops(top);
  CheckLabelsOnHost(1, labels_ + pos_, batch_size_);
  const int64_t count = int64_t{batch_size_} * item_size();
  UploadAndWait(ctx_, count, data_ + int64_t{pos_} * item_size(), top[0]->data());
  UploadAndWait(ctx_, batch_size_, labels_ + pos_, top[1]->data());
  pos_ = (pos_ + batch_size_) % n_;
}

CORTADO_REGISTER_LAYER(MemoryData, MemoryDataLayer);

}  // namespace cortado
