// python_layer.cpp — the "Python" layer type (python_param { module layer param_str }) and
// cortado.Layer, the base class of a Python layer: Caffe's PythonLayer.
//
// The layer imports python_param.module, instantiates python_param.layer (a subclass of
// cortado.Layer) and calls its setup(bottom, top) once, then reshape(bottom, top) at setup and before
// every forward(bottom, top), and backward(top, propagate_down, bottom). self.param_str, self.phase and
// self.blobs (self.blobs.add_blob(*shape) during setup: pycaffe.py makes self.blobs a sequence with
// add_blob) are there as in pycaffe, and so are solver_rank() and solver_count() in data-parallel
// training. On a CPU net the Python code reads and writes the blobs themselves; on a GPU net it works
// on host copies, which the layer moves to and from the device around each call. Tops may be
// reshaped in forward within the size planned at setup.
//
// Inside `trainer` (no Python caller) the first Python layer starts an embedded interpreter, and a
// Python exception becomes cortado::Error; called from Python, it stays a Python exception of the same
// type, its message prefixed with the layer.
#include <pybind11/embed.h>
#include <unistd.h>

#include <climits>

#include "binding.hpp"
#include "cortado/error.hpp"
#include "cortado/gpu.hpp"
#include "cortado/layer_registry.hpp"

namespace cortado::python {
namespace {

bool& Embedded() {
  static bool embedded = false;
  return embedded;
}

// The context of the Python layer this thread has called into: solver_rank() and solver_count() read
// its data-parallel rank (each rank builds its own nets, so each Python layer knows its own).
const Context*& CallingContext() {
  thread_local const Context* context = nullptr;
  return context;
}

// Inside trainer: starts the interpreter, with the trainer's own build of the package on sys.path.
void EnsureInterpreter() {
  if (Py_IsInitialized()) return;
  py::initialize_interpreter(true, 0, nullptr, false);
  Embedded() = true;
  char exe[PATH_MAX] = {};
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  py::list path = py::module_::import("sys").attr("path");
  path.insert(0, "");
  if (n > 0) {
    std::string dir(exe, static_cast<size_t>(n));
    dir = dir.substr(0, dir.rfind('/'));
    path.append(dir + "/../python");  // build/tools/trainer -> build/python
  }
}

// A host Blob with memory of its own, for a GPU net's Python layer.
struct HostBlob {
  Blob blob;
  std::vector<float> data, diff;
  void Fit(const Blob& real) {
    const int64_t capacity = std::max(real.capacity(), real.count());
    if (static_cast<int64_t>(data.size()) < capacity) {
      data.assign(capacity, 0.0f);
      diff.assign(capacity, 0.0f);
    }
    blob.Bind(Device::kCPU, data.data(), diff.data(), static_cast<int64_t>(data.size()));
    blob.Reshape(real.shape());
  }
};

void Copy(float* to, const float* from, int64_t count) {
  if (count > 0 && to != nullptr && from != nullptr) GpuCopy(to, from, count * sizeof(float));
}

class PythonLayer : public Layer {
 public:
  PythonLayer(const LayerParameter& param, Context& ctx) : Layer(param, ctx) {
    EnsureInterpreter();
    const PythonParameter& p = param.python_param();
    CORTADO_REQUIRE(!p.module().empty() && !p.layer().empty(), Describe(), ": python_param needs module and layer");
    Call("import", [&] {
      py::object cls = py::module_::import(p.module().c_str()).attr(p.layer().c_str());
      self_ = cls();
    });
    PyLayer* handle = nullptr;
    try {
      handle = &self_.cast<PyLayer&>();
    } catch (const py::cast_error&) {
      Fail(Describe(), ": ", p.module(), ".", p.layer(), " is not a subclass of cortado.Layer (caffe.Layer)");
    }
    handle->layer = this;
    handle->python_blobs = &python_view_;
    handle->add_blob = [this](const std::vector<int>& shape) { AddBlob(shape); };
  }
  ~PythonLayer() override {
    if (!self_ || !Py_IsInitialized()) return;
    py::gil_scoped_acquire gil;
    PyLayer& handle = self_.cast<PyLayer&>();
    handle.layer = nullptr;
    handle.python_blobs = nullptr;
    handle.add_blob = nullptr;
  }

  const char* type() const override { return "Python"; }
  bool HasGpuImplementation() const override { return true; }
  bool IsCapturable() const override { return false; }
  bool ReshapesTopsInForward() const override { return true; }
  py::object object() const { return self_; }

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override {
    setting_up_ = true;
    Call("setup", [&] { self_.attr("setup")(Wrap(bottom), Wrap(top)); });
    setting_up_ = false;
  }
  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    Call("reshape", [&] { self_.attr("reshape")(Wrap(bottom), Wrap(top)); });
  }
  // The values setup wrote into its blobs reach their planned memory.
  void InitParams() override {
    for (size_t i = 0; i < blobs_.size(); ++i) {
      const HostBlob& staged = *staged_params_[i];
      std::vector<float> values(staged.data.begin(), staged.data.begin() + blobs_[i]->count());
      blobs_[i]->WriteData(values);
    }
    if (!blobs_.empty()) InitView();  // on a CPU, the Python code now reads the blobs themselves
  }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    if (ctx_.device() == Device::kCPU && !blobs_.empty() && python_view_[0] != blobs_[0]) InitView();
    py::list b = Wrap(bottom), t = Wrap(top);
    Call("reshape", [&] { self_.attr("reshape")(b, t); });
    Call("forward", [&] { self_.attr("forward")(b, t); });
  }
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override {
    if (!py::hasattr(self_, "backward")) return;
    Call("backward", [&] { self_.attr("backward")(Wrap(top), py::cast(propagate_down), Wrap(bottom)); });
  }
  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    BlobVec b = Stage(bottom, &host_bottom_, true, false), t = Stage(top, &host_top_, false, false);
    ParamsToHost(false);
    Forward_cpu(b, t);
    for (size_t i = 0; i < top.size(); ++i) {
      const Blob& host = *t[i];
      CORTADO_REQUIRE(host.count() <= top[i]->capacity(), Describe(), ": top ", i, " was reshaped to ",
                      host.shape_string(), ", more than the ", top[i]->capacity(), " values planned at setup");
      top[i]->Reshape(host.shape());
      Copy(top[i]->data(), host.data(), host.count());
    }
    ParamsToDevice(false);
  }
  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override {
    BlobVec t = Stage(top, &host_top_, true, true), b = Stage(bottom, &host_bottom_, true, false);
    ParamsToHost(true);
    Backward_cpu(t, propagate_down, b);
    for (size_t i = 0; i < bottom.size(); ++i)
      if (propagate_down[i]) Copy(bottom[i]->diff(), b[i]->diff(), b[i]->count());
    ParamsToDevice(true);
  }

 private:
  // Runs a call into Python; a Python exception gets the layer's name.
  template <typename F>
  void Call(const char* what, F&& body) {
    struct Calling {
      const Context* outer = CallingContext();
      explicit Calling(const Context* ctx) { CallingContext() = ctx; }
      ~Calling() { CallingContext() = outer; }
    } calling(&ctx_);
    try {
      body();
    } catch (py::error_already_set& e) {
      const std::string message = py::str(e.value()).cast<std::string>();
      const std::string type_name = py::str(e.type().attr("__name__")).cast<std::string>();
      if (Embedded()) Fail(Describe(), ": ", what, ": ", type_name, ": ", message);
      const std::string text = Describe() + ": " + what + ": " + message;
      py::object replacement;
      try {
        replacement = e.type()(text);
      } catch (py::error_already_set&) {
        replacement = py::module_::import("builtins").attr("RuntimeError")(type_name + ": " + text);
      }
      replacement.attr("__cause__") = e.value();
      PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(replacement.ptr())), replacement.ptr());
      throw py::error_already_set();
    }
  }

  py::list Wrap(const BlobVec& blobs) {
    py::list list;
    for (Blob* blob : blobs) list.append(PyBlob::Direct(blob));
    return list;
  }

  void AddBlob(const std::vector<int>& shape) {
    CORTADO_REQUIRE(setting_up_, "add_blob: only a Python layer's setup adds blobs");
    blobs_.push_back(std::make_shared<Blob>(shape));
    staged_params_.push_back(std::make_unique<HostBlob>());
    staged_params_.back()->Fit(*blobs_.back());
    InitView();
  }
  // What self.blobs shows: host blobs during setup and on a GPU, the blobs themselves on a CPU.
  void InitView() {
    python_view_.clear();
    const bool host = setting_up_ || ctx_.device() == Device::kGPU || blobs_[0]->data() == nullptr;
    for (size_t i = 0; i < blobs_.size(); ++i)
      python_view_.push_back(host ? std::shared_ptr<Blob>(&staged_params_[i]->blob, [](Blob*) {}) : blobs_[i]);
  }

  // Host copies of GPU blobs, with their data (and diff) downloaded.
  BlobVec Stage(const BlobVec& real, std::vector<std::unique_ptr<HostBlob>>* hosts, bool data, bool diff) {
    while (hosts->size() < real.size()) hosts->push_back(std::make_unique<HostBlob>());
    BlobVec out;
    for (size_t i = 0; i < real.size(); ++i) {
      HostBlob& host = *(*hosts)[i];
      host.Fit(*real[i]);
      if (data) Copy(host.blob.data(), real[i]->data(), real[i]->count());
      if (diff) Copy(host.blob.diff(), real[i]->diff(), real[i]->count());
      out.push_back(&host.blob);
    }
    return out;
  }
  void ParamsToHost(bool diff) {
    for (size_t i = 0; i < blobs_.size(); ++i) {
      Copy(staged_params_[i]->blob.data(), blobs_[i]->data(), blobs_[i]->count());
      if (diff) Copy(staged_params_[i]->blob.diff(), blobs_[i]->diff(), blobs_[i]->count());
    }
  }
  void ParamsToDevice(bool diff) {
    for (size_t i = 0; i < blobs_.size(); ++i) {
      Copy(blobs_[i]->data(), staged_params_[i]->blob.data(), blobs_[i]->count());
      if (diff) Copy(blobs_[i]->diff(), staged_params_[i]->blob.diff(), blobs_[i]->count());
    }
  }

  py::object self_;
  bool setting_up_ = false;
  std::vector<std::unique_ptr<HostBlob>> staged_params_;  // setup's values; a GPU net's host copies
  std::vector<std::shared_ptr<Blob>> python_view_;         // self.blobs
  std::vector<std::unique_ptr<HostBlob>> host_bottom_, host_top_;
};

CORTADO_REGISTER_LAYER(Python, PythonLayer);

}  // namespace

py::object PythonLayerObject(Layer* layer) {
  auto* python = dynamic_cast<PythonLayer*>(layer);
  return python != nullptr ? python->object() : py::object();
}

void DefineLayer(py::module_& m) {
  py::class_<PyLayer>(m, "Layer", py::dynamic_attr(),
                      "A layer of a net; subclass it to write a Python layer (type: \"Python\")")
      .def(py::init([](py::args, py::kwargs) { return PyLayer(); }))
      .def_property_readonly("type", [](const PyLayer& l) { return l.layer ? std::string(l.layer->type()) : "Python"; })
      .def_property_readonly("_blobs", [](const PyLayer& l) {
        py::list list;
        if (l.python_blobs != nullptr) {
          for (auto& blob : *l.python_blobs) list.append(PyBlob::Direct(blob.get()));
        } else if (l.layer != nullptr) {
          for (size_t j = 0; j < l.layer->blobs().size(); ++j)
            list.append(PyBlob::OfParam(l.owner, l.layer_id, static_cast<int>(j)));
        }
        return list;
      })
      .def_property_readonly("param_str", [](const PyLayer& l) {
        return l.layer ? l.layer->layer_param().python_param().param_str() : std::string();
      })
      .def_property_readonly("phase", [](const PyLayer& l) { return l.layer ? static_cast<int>(l.layer->phase()) : 0; })
      .def_property_readonly("name", [](const PyLayer& l) { return l.layer ? l.layer->name() : std::string(); })
      .def("add_blob", [](PyLayer& l, py::args dims) {
        CORTADO_REQUIRE(l.add_blob != nullptr, "add_blob: only a Python layer's setup adds blobs");
        l.add_blob(ShapeArg(dims, "add_blob"));
      });
  // pycaffe's names for the data-parallel rank, for a Python data layer to read its own block of every
  // batch (as the built-in data layers do); 0 of 1 outside data-parallel training.
  m.def("solver_count", [] { return CallingContext() ? CallingContext()->ranks() : 1; },
        "The number of data-parallel ranks training the net whose Python layer calls this (1 outside one)");
  m.def("solver_rank", [] { return CallingContext() ? CallingContext()->rank() : 0; },
        "The data-parallel rank training the net whose Python layer calls this (0 outside one)");
}

}  // namespace cortado::python
