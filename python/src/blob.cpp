// blob.cpp — cortado.Blob: pycaffe's Blob (shape, count, num/channels/height/width, reshape, and the
// data and diff as writable float32 numpy arrays that the net reads and writes; a mixed-precision net's
// 16-bit blob as a read-only float32 copy).
#include <algorithm>

#include "binding.hpp"
#include "cortado/error.hpp"

namespace cortado::python {

PyBlob PyBlob::OfNet(std::shared_ptr<NetOwner> owner, int blob_id) {
  PyBlob b;
  b.owner_ = std::move(owner);
  b.blob_id_ = blob_id;
  return b;
}

PyBlob PyBlob::OfParam(std::shared_ptr<NetOwner> owner, int layer_id, int index) {
  PyBlob b;
  b.owner_ = std::move(owner);
  b.layer_id_ = layer_id;
  b.index_ = index;
  return b;
}

PyBlob PyBlob::Direct(Blob* blob) {
  PyBlob b;
  b.direct_ = blob;
  return b;
}

Blob& PyBlob::get() const {
  if (direct_ != nullptr) return *direct_;
  if (blob_id_ >= 0) return *owner_->net().blob_by_name(owner_->net().blob_names()[blob_id_]);
  return *owner_->param_net().layers()[layer_id_]->blobs()[index_];
}

namespace {

// A numpy array of `blob`'s shape over `values`, holding `base` (what keeps the memory alive).
py::array ArrayOver(const Blob& blob, float* values, py::object base, bool writeable = true) {
  std::vector<py::ssize_t> shape(blob.shape().begin(), blob.shape().end());
  std::vector<py::ssize_t> strides(shape.size());
  py::ssize_t stride = sizeof(float);
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= shape[i];
  }
  py::array array(py::dtype::of<float>(), shape, strides, values, base);
  if (!writeable) array.attr("flags").attr("writeable") = false;
  return array;
}

// blob.data = x would only rebind the name; the values are written into the array the blob has.
[[noreturn]] void RefuseReplacing(const char* field) {
  Raise<py::attribute_error>("Blob.", field, " cannot be replaced; write into it: blob.", field, "[...] = values");
}

py::object Holding(std::shared_ptr<void> keepalive) {
  return py::capsule(new std::shared_ptr<void>(std::move(keepalive)),
                     [](void* p) { delete static_cast<std::shared_ptr<void>*>(p); });
}

}  // namespace

py::array PyBlob::Values(py::object self, bool diff) const {
  Blob& blob = get();
  if ((diff ? blob.diff_type() : blob.data_type()) != DataType::kFloat && (diff ? blob.raw_diff() : blob.raw_data())) {
    // A mixed-precision net's 16-bit blob: its values as float32, a read-only copy.
    const std::vector<float> copy = diff ? blob.ReadDiff() : blob.ReadData();
    py::array_t<float> values(std::vector<py::ssize_t>(blob.shape().begin(), blob.shape().end()));
    std::copy(copy.begin(), copy.end(), values.mutable_data());
    values.attr("flags").attr("writeable") = false;
    return std::move(values);
  }
  float* values = diff ? (blob.raw_diff() ? blob.diff() : nullptr) : (blob.raw_data() ? blob.data() : nullptr);
  if (blob.count() == 0) return py::array_t<float>(std::vector<py::ssize_t>(blob.shape().begin(), blob.shape().end()));
  if (values == nullptr && (diff || blob.raw_data() == nullptr)) {
    // A blob nobody differentiates (a TEST net without force_backward), or one whose memory is not
    // planned yet (a Python layer's setup, where its shape is what counts): zeros, read-only.
    py::array_t<float> zeros(std::vector<py::ssize_t>(blob.shape().begin(), blob.shape().end()));
    std::fill(zeros.mutable_data(), zeros.mutable_data() + zeros.size(), 0.0f);
    zeros.attr("flags").attr("writeable") = false;
    return std::move(zeros);
  }
  if (direct_ != nullptr) {
    CORTADO_REQUIRE(blob.device() == Device::kCPU, "a GPU blob has no host view here");
    return ArrayOver(blob, values, self);
  }
  if (blob.device() == Device::kCPU) return ArrayOver(blob, values, Holding(owner_->keepalive()));
  std::shared_ptr<Mirror> mirror = owner_->mirrors().Read(values, blob.capacity(), blob.count());
  auto both = std::make_shared<std::pair<std::shared_ptr<void>, std::shared_ptr<Mirror>>>(owner_->keepalive(), mirror);
  return ArrayOver(blob, mirror->host.get(), Holding(both));
}

void PyBlob::Reshape(const std::vector<int>& shape) {
  if (owner_ != nullptr && blob_id_ >= 0) {
    const std::vector<int> inputs = owner_->InputBlobIds();
    if (std::find(inputs.begin(), inputs.end(), blob_id_) != inputs.end()) {
      owner_->ReshapeInput(blob_id_, shape);
      return;
    }
  }
  Blob& blob = get();
  int64_t count = 1;
  for (int d : shape) count *= d;
  CORTADO_REQUIRE(blob.raw_data() == nullptr || count <= blob.capacity(), "reshape to ", count, " values: the blob "
                  "was planned for ", blob.capacity(), "; only a net's inputs (Input layers) grow (the net is "
                  "planned again)");
  blob.Reshape(shape);
}

void DefineBlob(py::module_& m) {
  py::class_<PyBlob>(m, "Blob", "An N-dimensional float32 array of a net: data and diff (pycaffe's Blob)")
      .def_property_readonly("shape", [](const PyBlob& b) { return py::tuple(py::cast(b.get().shape())); })
      .def_property_readonly("count", [](const PyBlob& b) { return b.get().count(); })
      .def_property_readonly("num", [](const PyBlob& b) { return b.get().num(); })
      .def_property_readonly("channels", [](const PyBlob& b) { return b.get().channels(); })
      .def_property_readonly("height", [](const PyBlob& b) { return b.get().height(); })
      .def_property_readonly("width", [](const PyBlob& b) { return b.get().width(); })
      .def_property("data", [](py::object self) { return self.cast<const PyBlob&>().Values(self, false); },
                    [](py::object, py::object) { RefuseReplacing("data"); })
      .def_property("diff", [](py::object self) { return self.cast<const PyBlob&>().Values(self, true); },
                    [](py::object, py::object) { RefuseReplacing("diff"); })
      .def("reshape", [](PyBlob& b, py::args dims) { b.Reshape(ShapeArg(dims, "reshape")); })
      .def("__repr__", [](const PyBlob& b) { return "<cortado.Blob " + b.get().shape_string() + ">"; });
}

}  // namespace cortado::python
