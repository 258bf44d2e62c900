// blob.cpp — shape bookkeeping, binding to arena memory, and BlobProto conversion.
#include "cortado/blob.hpp"

#include <glog/logging.h>

#include <algorithm>
#include <sstream>

#include "cortado/cortado.pb.h"
#include "cortado/error.hpp"
#include "cortado/gpu.hpp"

namespace cortado {

void Blob::Reshape(const std::vector<int>& shape) {
  CORTADO_REQUIRE(shape.size() <= static_cast<size_t>(kMaxAxes), "blob has ", shape.size(),
                  " axes; at most ", kMaxAxes, " are supported");
  // At most 2^40 values (4 TiB of floats): any real blob, and sums of millions of them stay in 64 bits.
  constexpr int64_t kMostValues = int64_t{1} << 40;
  int64_t count = 1;
  for (int dim : shape) {
    CORTADO_REQUIRE(dim >= 0, "blob dimension ", dim, " is negative");
    count = dim == 0 || count <= kMostValues / dim ? count * dim : kMostValues + 1;
  }
  if (count > kMostValues) {
    std::ostringstream dims;
    for (int dim : shape) dims << dim << " ";
    Fail("blob shape ", dims.str(), "has more than 2^40 values");
  }
  CHECK(data_ == nullptr || count <= capacity_)
      << "Reshape to " << count << " elements after binding (capacity " << capacity_ << ")";
  shape_ = shape;
  count_ = count;
}

void Blob::Reshape(const BlobShape& shape) {
  std::vector<int> dims(shape.dim().begin(), shape.dim().end());
  Reshape(dims);
}

int64_t Blob::count(int start_axis, int end_axis) const {
  CHECK_LE(start_axis, end_axis);
  CHECK_GE(start_axis, 0);
  CHECK_LE(end_axis, num_axes());
  int64_t count = 1;
  for (int i = start_axis; i < end_axis; ++i) count *= shape_[i];
  return count;
}

int Blob::CanonicalAxisIndex(int axis) const {
  const int n = num_axes();
  CORTADO_REQUIRE(axis >= -n && axis < std::max(n, 1), "axis ", axis, " is out of range for a ", n,
                  "-D blob of shape ", shape_string());
  return axis < 0 ? axis + n : axis;
}

std::string Blob::shape_string() const {
  std::ostringstream out;
  for (int dim : shape_) out << dim << " ";
  out << "(" << count_ << ")";
  return out.str();
}

int Blob::LegacyShape(int index) const {
  CHECK_LE(num_axes(), 4) << "legacy 4-D accessor on a " << num_axes() << "-D blob";
  if (index >= num_axes()) return 1;
  return shape_[index];
}

int64_t Blob::offset(int n, int c, int h, int w) const {
  return ((static_cast<int64_t>(n) * channels() + c) * height() + h) * width() + w;
}

bool Blob::ShapeEquals(const BlobProto& other) const {
  if (other.has_num() || other.has_channels() || other.has_height() || other.has_width()) {
    // Legacy 4-D protos (num, channels, height, width) line up with our axes from the END, missing
    // leading axes read as 1, as in Caffe: old biases are 1×1×1×N, InnerProduct weights 1×1×M×K.
    if (num_axes() > 4) return false;
    const int legacy[4] = {other.num(), other.channels(), other.height(), other.width()};
    for (int i = 0; i < 4; ++i) {
      const int axis = i - (4 - num_axes());
      if ((axis < 0 ? 1 : shape_[axis]) != legacy[i]) return false;
    }
    return true;
  }
  if (other.shape().dim_size() != num_axes()) return false;
  for (int i = 0; i < num_axes(); ++i)
    if (other.shape().dim(i) != shape_[i]) return false;
  return true;
}

void Blob::Bind(Device device, float* data, float* diff, int64_t capacity) {
  CHECK_GE(capacity, count_);
  device_ = device;
  data_ = data;
  diff_ = diff;
  capacity_ = capacity;
}

void Blob::ShareData(const Blob& other) {
  CHECK_EQ(count_, other.count()) << "ShareData between blobs of different sizes";
  device_ = other.device_;
  data_ = other.data_;
  capacity_ = other.capacity_;
}

void Blob::ShareDiff(const Blob& other) {
  CHECK_EQ(count_, other.count()) << "ShareDiff between blobs of different sizes";
  diff_ = other.diff_;
}

// Reads the shape a proto describes: the new `shape` field, else the legacy 4-D fields.
std::vector<int> BlobProtoShape(const BlobProto& proto) {
  std::vector<int> shape;
  if (proto.has_num() || proto.has_channels() || proto.has_height() || proto.has_width()) {
    shape = {proto.num(), proto.channels(), proto.height(), proto.width()};
  } else {
    for (int i = 0; i < proto.shape().dim_size(); ++i)
      shape.push_back(static_cast<int>(proto.shape().dim(i)));
  }
  return shape;
}

void Blob::FromProto(const BlobProto& proto, bool reshape) {
  if (reshape) {
    Reshape(BlobProtoShape(proto));
  } else {
    CORTADO_REQUIRE(ShapeEquals(proto), "blob shape mismatch: expected ", shape_string());
  }
  const bool is_double = proto.double_data_size() > 0;
  const int64_t n = is_double ? proto.double_data_size() : proto.data_size();
  CORTADO_REQUIRE(n == count_, "blob holds ", n, " values but its shape ", shape_string(),
                  " needs ", count_);
  // A GPU blob's values go through a host copy (set-up and restore only, never in a step).
  std::vector<float> staging;
  auto host = [&](float* target) {
    if (device_ == Device::kCPU) return target;
    staging.assign(static_cast<size_t>(count_), 0.0f);
    return staging.data();
  };
  auto upload = [&](float* target, const float* values) {
    if (device_ == Device::kGPU) GpuCopy(target, values, static_cast<size_t>(count_) * sizeof(float));
  };
  if (data_ != nullptr) {
    float* out = host(data_);
    for (int64_t i = 0; i < n; ++i) out[i] = is_double ? static_cast<float>(proto.double_data(i)) : proto.data(i);
    upload(data_, out);
  }
  const bool diff_double = proto.double_diff_size() > 0;
  const int64_t nd = diff_double ? proto.double_diff_size() : proto.diff_size();
  if (nd == count_ && diff_ != nullptr) {
    float* out = host(diff_);
    for (int64_t i = 0; i < nd; ++i) out[i] = diff_double ? static_cast<float>(proto.double_diff(i)) : proto.diff(i);
    upload(diff_, out);
  }
}

std::vector<float> Blob::ReadData() const { return ReadValues(data_); }
std::vector<float> Blob::ReadDiff() const { return ReadValues(diff_); }

std::vector<float> Blob::ReadValues(const float* values) const {
  std::vector<float> out(static_cast<size_t>(count_));
  if (values == nullptr || count_ == 0) return out;
  if (device_ == Device::kGPU) {
    GpuCopy(out.data(), values, out.size() * sizeof(float));
  } else {
    std::copy(values, values + count_, out.begin());
  }
  return out;
}

std::vector<float> HostValues(Context& ctx, const Blob& blob) {
  if (blob.device() == Device::kGPU) {
    ctx.Synchronize();
    return blob.ReadData();
  }
  return std::vector<float>(blob.data(), blob.data() + blob.count());
}

void Blob::WriteData(const std::vector<float>& values) {
  CHECK_EQ(static_cast<int64_t>(values.size()), count_) << "WriteData of another size";
  if (device_ == Device::kGPU) {
    GpuCopy(data_, values.data(), values.size() * sizeof(float));
  } else {
    std::copy(values.begin(), values.end(), data_);
  }
}

void Blob::WriteDiff(const std::vector<float>& values) {
  CHECK_EQ(static_cast<int64_t>(values.size()), count_) << "WriteDiff of another size";
  if (device_ == Device::kGPU) {
    GpuCopy(diff_, values.data(), values.size() * sizeof(float));
  } else {
    std::copy(values.begin(), values.end(), diff_);
  }
}

void Blob::ToProto(BlobProto* proto, bool write_diff) const {
  if (device_ == Device::kGPU) {  // through host copies (snapshots only)
    proto->Clear();
    for (int dim : shape_) proto->mutable_shape()->add_dim(dim);
    const std::vector<float> data = ReadData();
    proto->mutable_data()->Add(data.begin(), data.end());
    if (write_diff && diff_ != nullptr) {
      const std::vector<float> diff = ReadDiff();
      proto->mutable_diff()->Add(diff.begin(), diff.end());
    }
    return;
  }
  proto->Clear();
  for (int dim : shape_) proto->mutable_shape()->add_dim(dim);
  proto->mutable_data()->Reserve(static_cast<int>(count_));
  for (int64_t i = 0; i < count_; ++i) proto->add_data(data_[i]);
  if (write_diff && diff_ != nullptr) {
    proto->mutable_diff()->Reserve(static_cast<int>(count_));
    for (int64_t i = 0; i < count_; ++i) proto->add_diff(diff_[i]);
  }
}

}  // namespace cortado
