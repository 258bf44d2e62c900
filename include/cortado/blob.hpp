// blob.hpp — an N-dimensional array (data and gradient) that lives on one device.
//
// Its data and its diff each have a storage type (float unless the net's precision says otherwise:
// kernels/storage_types.hpp). data() and diff() are the float views and refuse a 16-bit blob; a layer
// that reads 16-bit storage asks for data_as<T>(). A Blob never allocates. During setup only its shape is set; the memory plan (memory.hpp) then binds
// it to a region of the device's arena. After binding, Reshape may only keep or shrink the element
// count. Reading a GPU blob on the host is an explicit copy, never a side effect of an accessor.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cortado/context.hpp"
#include "cortado/kernels/storage_types.hpp"

namespace cortado {

class BlobProto;
class BlobShape;

// How a 4-D image blob's elements lie in memory. Its shape is N×C×H×W either way (the axes' meaning);
// kNHWC stores each position's channels together (channels-last, as cuDNN's and oneDNN's fastest
// convolutions want). Blobs of other ranks ignore it.
enum class MemoryLayout { kNCHW, kNHWC };

class Blob {
 public:
  static constexpr int kMaxAxes = 32;

  Blob() = default;
  explicit Blob(const std::vector<int>& shape) { Reshape(shape); }
  Blob(const Blob&) = delete;
  Blob& operator=(const Blob&) = delete;

  // ---- shape -------------------------------------------------------------------------------------
  void Reshape(const std::vector<int>& shape);
  void Reshape(const BlobShape& shape);
  void ReshapeLike(const Blob& other) { Reshape(other.shape()); }
  const std::vector<int>& shape() const { return shape_; }
  int shape(int axis) const { return shape_[CanonicalAxisIndex(axis)]; }
  int num_axes() const { return static_cast<int>(shape_.size()); }
  int64_t count() const { return count_; }
  int64_t count(int start_axis, int end_axis) const;  // product of dims in [start, end)
  int64_t count(int start_axis) const { return count(start_axis, num_axes()); }
  int CanonicalAxisIndex(int axis) const;  // accepts negative axes, -1 = last
  std::string shape_string() const;        // "64 1 28 28 (50176)"
  bool ShapeEquals(const BlobProto& other) const;
  // Caffe's legacy 4-D accessors: a missing axis reads as 1.
  int LegacyShape(int index) const;
  int num() const { return LegacyShape(0); }
  int channels() const { return LegacyShape(1); }
  int height() const { return LegacyShape(2); }
  int width() const { return LegacyShape(3); }
  int64_t offset(int n, int c = 0, int h = 0, int w = 0) const;

  // ---- memory ------------------------------------------------------------------------------------
  // Storage types, set before binding (the Net sets them from the layers' precision).
  DataType data_type() const { return data_type_; }
  DataType diff_type() const { return diff_type_; }
  void set_types(DataType data, DataType diff) {
    data_type_ = data;
    diff_type_ = diff;
  }
  MemoryLayout layout() const { return layout_; }
  void set_layout(MemoryLayout layout) { layout_ = layout; }
  // A 4-D blob stored channels-last.
  bool channels_last() const { return layout_ == MemoryLayout::kNHWC && num_axes() == 4; }
  // The plan's size of the data (diff) in 4-byte units: count · SizeOf(type) bytes, rounded up.
  int64_t data_floats() const { return StorageFloats(count_, data_type_); }
  int64_t diff_floats() const { return StorageFloats(count_, diff_type_); }
  static int64_t StorageFloats(int64_t count, DataType type) { return (count * SizeOf(type) + 3) / 4; }
  // Points this blob at memory owned by an arena. diff may be null (a blob nobody differentiates).
  // capacity: elements of the blob's storage types.
  void Bind(Device device, void* data, void* diff, int64_t capacity);
  // Makes this blob read and write another blob's memory (Flatten, Reshape, shared parameters).
  void ShareData(const Blob& other);
  void ShareDiff(const Blob& other);
  bool bound() const { return data_ != nullptr || count_ == 0; }
  Device device() const { return device_; }
  int64_t capacity() const { return capacity_; }
  // Float storage.
  float* data() { return Floats(data_, data_type_); }
  const float* data() const { return Floats(data_, data_type_); }
  float* diff() { return Floats(diff_, diff_type_); }
  const float* diff() const { return Floats(diff_, diff_type_); }
  // Storage of type T (float, BFloat16, Float16), which must be the blob's.
  template <typename T>
  T* data_as() const {
    return static_cast<T*>(Typed(data_, data_type_, StorageTypeOf<T>::value));
  }
  template <typename T>
  T* diff_as() const {
    return static_cast<T*>(Typed(diff_, diff_type_, StorageTypeOf<T>::value));
  }
  void* raw_data() const { return data_; }
  void* raw_diff() const { return diff_; }
  bool has_diff() const { return diff_ != nullptr; }
  float data_at(int n, int c = 0, int h = 0, int w = 0) const { return data()[offset(n, c, h, w)]; }
  float diff_at(int n, int c = 0, int h = 0, int w = 0) const { return diff()[offset(n, c, h, w)]; }

  // ---- explicit copies and serialisation ---------------------------------------------------------
  // Whole-blob copies to and from the host, for any device (a GPU blob waits for the copy). For
  // set-up, snapshots, tests and the numbers a person reads; never inside a step's hot path.
  std::vector<float> ReadData() const;
  std::vector<float> ReadDiff() const;
  void WriteData(const std::vector<float>& values);
  void WriteDiff(const std::vector<float>& values);
  // Copies values from a proto; the shape must match unless reshape is true (before binding).
  void FromProto(const BlobProto& proto, bool reshape = false);
  void ToProto(BlobProto* proto, bool write_diff = false) const;

 private:
  std::vector<float> ReadValues(const void* values, DataType type) const;
  void WriteValues(const std::vector<float>& values, void* target, DataType type);
  float* Floats(void* values, DataType type) const {
    if (type != DataType::kFloat) FailWrongType(type, DataType::kFloat);
    return static_cast<float*>(values);
  }
  void* Typed(void* values, DataType type, DataType wanted) const {
    if (type != wanted) FailWrongType(type, wanted);
    return values;
  }
  [[noreturn]] void FailWrongType(DataType type, DataType wanted) const;

  std::vector<int> shape_;
  int64_t count_ = 0;
  int64_t capacity_ = 0;
  Device device_ = Device::kCPU;
  DataType data_type_ = DataType::kFloat;
  DataType diff_type_ = DataType::kFloat;
  MemoryLayout layout_ = MemoryLayout::kNCHW;
  void* data_ = nullptr;
  void* diff_ = nullptr;
};

using BlobVec = std::vector<Blob*>;

// The shape a BlobProto describes: its `shape` field, else the legacy num/channels/height/width.
std::vector<int> BlobProtoShape(const BlobProto& proto);

// A blob's values on the host, for the numbers a person reads (outputs displayed, tested, printed): a
// GPU blob's after the work queued on ctx (which computed them), through a copy; a CPU blob's copied.
std::vector<float> HostValues(Context& ctx, const Blob& blob);

}  // namespace cortado
