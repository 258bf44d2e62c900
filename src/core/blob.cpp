// blob.cpp — shape bookkeeping, binding to arena memory, and BlobProto conversion.
#include "cortado/blob.hpp"

#include <glog/logging.h>

#include <algorithm>
#include <sstream>

#include "cortado/cortado.pb.h"
#include "cortado/error.hpp"
#include "cortado/gpu.hpp"
#include "cortado/kernels/for_each.hpp"  // FromFloat

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

void Blob::FailWrongType(DataType type, DataType wanted) const {
  LOG(FATAL) << "a " << DataTypeName(wanted) << " view of a " << DataTypeName(type) << " blob (" << shape_string()
             << "): the Net converts where types change, so a layer sees the types it asked for";
  abort();
}

void Blob::Bind(Device device, void* data, void* diff, int64_t capacity) {
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
  data_type_ = other.data_type_;
  layout_ = other.layout_;
  capacity_ = other.capacity_;
}

void Blob::ShareDiff(const Blob& other) {
  CHECK_EQ(count_, other.count()) << "ShareDiff between blobs of different sizes";
  diff_ = other.diff_;
  diff_type_ = other.diff_type_;
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
  // A GPU or 16-bit blob's values go through a float host copy (set-up and restore only, never in a step).
  if (data_ != nullptr) {
    std::vector<float> values(static_cast<size_t>(count_));
    for (int64_t i = 0; i < n; ++i) values[i] = is_double ? static_cast<float>(proto.double_data(i)) : proto.data(i);
    WriteValues(values, data_, data_type_);
  }
  const bool diff_double = proto.double_diff_size() > 0;
  const int64_t nd = diff_double ? proto.double_diff_size() : proto.diff_size();
  if (nd == count_ && diff_ != nullptr) {
    std::vector<float> values(static_cast<size_t>(count_));
    for (int64_t i = 0; i < nd; ++i) values[i] = diff_double ? static_cast<float>(proto.double_diff(i)) : proto.diff(i);
    WriteValues(values, diff_, diff_type_);
  }
}

std::vector<float> Blob::ReadData() const { return ReadValues(data_, data_type_); }
std::vector<float> Blob::ReadDiff() const { return ReadValues(diff_, diff_type_); }

namespace {

template <typename T>
void Widen(const void* values, int64_t n, float* out) {
  const T* typed = static_cast<const T*>(values);
  for (int64_t i = 0; i < n; ++i) out[i] = ToFloat(typed[i]);
}

template <typename T>
void Narrow(const float* values, int64_t n, void* out) {
  T* typed = static_cast<T*>(out);
  for (int64_t i = 0; i < n; ++i) typed[i] = FromFloat<T>(values[i]);
}

}  // namespace

std::vector<float> Blob::ReadValues(const void* values, DataType type) const {
  std::vector<float> out(static_cast<size_t>(count_));
  if (values == nullptr || count_ == 0) return out;
  const size_t bytes = static_cast<size_t>(count_) * SizeOf(type);
  std::vector<char> staging;
  if (device_ == Device::kGPU) {
    staging.resize(bytes);
    GpuCopy(staging.data(), values, bytes);
    values = staging.data();
  }
  switch (type) {
    case DataType::kFloat: Widen<float>(values, count_, out.data()); break;
    case DataType::kBFloat16: Widen<BFloat16>(values, count_, out.data()); break;
    case DataType::kFloat16: Widen<Float16>(values, count_, out.data()); break;
  }
  return out;
}

void Blob::WriteValues(const std::vector<float>& values, void* target, DataType type) {
  CHECK_EQ(static_cast<int64_t>(values.size()), count_) << "a write of another size";
  const size_t bytes = static_cast<size_t>(count_) * SizeOf(type);
  std::vector<char> staging;
  void* host = target;
  if (device_ == Device::kGPU) {
    staging.resize(bytes);
    host = staging.data();
  }
  switch (type) {
    case DataType::kFloat: Narrow<float>(values.data(), count_, host); break;
    case DataType::kBFloat16: Narrow<BFloat16>(values.data(), count_, host); break;
    case DataType::kFloat16: Narrow<Float16>(values.data(), count_, host); break;
  }
  if (device_ == Device::kGPU && bytes > 0) GpuCopy(target, host, bytes);
}

std::vector<float> HostValues(Context& ctx, const Blob& blob) {
  if (blob.device() == Device::kGPU) ctx.Synchronize();
  return blob.ReadData();
}

void Blob::WriteData(const std::vector<float>& values) { WriteValues(values, data_, data_type_); }
void Blob::WriteDiff(const std::vector<float>& values) { WriteValues(values, diff_, diff_type_); }

void Blob::ToProto(BlobProto* proto, bool write_diff) const {
  proto->Clear();
  for (int dim : shape_) proto->mutable_shape()->add_dim(dim);
  if (device_ == Device::kCPU && data_type_ == DataType::kFloat) {  // straight from memory
    proto->mutable_data()->Add(data(), data() + count_);
  } else {  // through a float host copy (snapshots only)
    const std::vector<float> values = ReadData();
    proto->mutable_data()->Add(values.begin(), values.end());
  }
  if (write_diff && diff_ != nullptr) {
    const std::vector<float> values = ReadDiff();
    proto->mutable_diff()->Add(values.begin(), values.end());
  }
}

}  // namespace cortado
