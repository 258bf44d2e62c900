// binding.hpp — what the parts of the `cortado` Python module (pycaffe's API) share: the session
// state set by set_mode_*/set_device/set_random_seed, the owners that keep a net's memory alive for
// the numpy arrays viewing it, the host mirrors of GPU blobs, and the Blob and Layer wrappers.
//
// Memory: a numpy array from blob.data views the blob's memory (CPU) or its host mirror (GPU) and
// holds the owner of that memory, so it stays valid after the Net is deleted. On a GPU net a blob's
// mirror is downloaded when a script first reads .data/.diff after a pass, and every mirror read
// since the last pass is uploaded before the next one (forward, backward, a solver step): the copies
// happen at pass boundaries, only for the blobs a script touched.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <climits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cortado/blob.hpp"
#include "cortado/context.hpp"
#include "cortado/error.hpp"
#include "cortado/net.hpp"

namespace cortado::python {

namespace py = pybind11;

// ---- session state (pycaffe's Caffe:: singletons) ---------------------------------------------------
struct Session {
  Device device = Device::kCPU;
  int gpu_id = 0;
  int64_t seed = -1;  // -1: drawn from the clock
};
Session& session();

// ---- arguments from Python (arguments.cpp) ---------------------------------------------------------
// A script's mistake in an argument is found before anything changes and raised as the Python
// exception a script expects (Raise<py::value_error>, py::type_error, py::key_error, py::index_error),
// one line naming the argument and what it got.
template <typename Exception, typename... Parts>
[[noreturn]] void Raise(const Parts&... parts) {
  std::ostringstream out;
  detail::AppendAll(out, parts...);
  throw Exception(out.str());
}
std::string Repr(py::handle value);
// An integer (int, numpy integer: anything with __index__; not a float or a str) from low to high;
// `expected` replaces "an integer from low to high" in the message.
int IntArg(py::handle value, const std::string& what, int64_t low, int64_t high = INT_MAX,
           const std::string& expected = "");
// A shape: dimensions as separate integers or one sequence of them, each from 0 up.
std::vector<int> ShapeArg(const py::args& dims, const std::string& what);
// Whether `value` is a file path (str, bytes or os.PathLike), and the path.
bool IsPath(py::handle value);
std::string PathArg(py::handle value, const std::string& what);
// Names as a list of str (None: none; a lone str is refused, as it would be read letter by letter).
std::vector<std::string> NamesArg(py::handle value, const std::string& what);

// ---- host mirrors of GPU memory ---------------------------------------------------------------------
struct Mirror {
  std::unique_ptr<float[]> host;
  float* device = nullptr;
  int64_t count = 0;   // values copied, the blob's count when last read
  bool fresh = false;  // read since the last pass: the script may have written it
};

class HostMirrors {
 public:
  // The mirror of `device_values` (capacity floats), downloaded when stale; marked fresh.
  std::shared_ptr<Mirror> Read(float* device_values, int64_t capacity, int64_t count);
  // Before a pass: uploads every fresh mirror. After a pass: marks every mirror stale.
  void Upload();
  void MarkStale();
  void Clear() { mirrors_.clear(); }

 private:
  std::map<float*, std::shared_ptr<Mirror>> mirrors_;
};

// ---- the owner of a net -----------------------------------------------------------------------------
// A Python Net (OwnNet: may be rebuilt when its inputs are reshaped) or a solver's train or test net.
class NetOwner {
 public:
  virtual ~NetOwner() = default;
  virtual Net& net() = 0;                       // the current net
  virtual Net& param_net() { return net(); }    // where the parameters live
  virtual std::shared_ptr<void> keepalive() = 0;  // keeps the current net's memory
  virtual Device device() = 0;
  virtual HostMirrors& mirrors() = 0;
  // An input blob (an Input layer's top) takes a new shape: an OwnNet is built again with it (the
  // layers after it take their new shapes, and the memory is planned again); a solver's net refuses.
  virtual void ReshapeInput(int blob_id, const std::vector<int>& shape);
  std::vector<int> InputBlobIds();
  // Around every pass run on the net.
  void BeforePass() {
    if (device() == Device::kGPU) mirrors().Upload();
  }
  void AfterPass() {
    if (device() == Device::kGPU) mirrors().MarkStale();
  }
};

// A net built from a prototxt in Python. The parameters stay in the first net built; a rebuilt net
// (new input shapes) shares them, so arrays of parameters a script holds stay connected.
class OwnNet : public NetOwner {
 public:
  OwnNet(const NetParameter& param, const std::string& source);
  Net& net() override { return *instance_->net; }
  Net& param_net() override { return *instance_->params; }
  std::shared_ptr<void> keepalive() override { return instance_; }
  Device device() override { return instance_->ctx->device(); }
  HostMirrors& mirrors() override { return mirrors_; }
  void ReshapeInput(int blob_id, const std::vector<int>& shape) override;
  // pycaffe's share_with: this net reads `other`'s parameters from now on.
  void ShareWith(NetOwner& other, std::shared_ptr<void> other_keepalive);

 private:
  struct ResizedInput {  // an input given a new shape, beyond its memory
    std::string name;
    std::vector<int> shape;
  };
  struct Instance {
    std::shared_ptr<Context> ctx;
    std::shared_ptr<void> params_keepalive;  // another net's, after share_with
    std::shared_ptr<Net> params;             // the net holding the parameters
    std::shared_ptr<Net> net;                // destroyed first
  };
  // Builds the net again with the current input shapes (`resized`'s new), sharing the parameters of
  // `params`.
  void Rebuild(Net* params, std::shared_ptr<void> params_keepalive, const ResizedInput& resized);
  void CopyIfSameShape(const std::string& blob, const Net& from, Net& to, const ResizedInput& resized);

  NetParameter param_;
  std::string source_;
  std::shared_ptr<Instance> instance_;
  HostMirrors mirrors_;
};

// ---- wrappers ---------------------------------------------------------------------------------------
// A Blob as Python sees it: a net's blob or parameter found through its owner on every access (so a
// wrapper survives a rebuild), or a blob handed to a Python layer's methods (direct).
class PyBlob {
 public:
  static PyBlob OfNet(std::shared_ptr<NetOwner> owner, int blob_id);
  static PyBlob OfParam(std::shared_ptr<NetOwner> owner, int layer_id, int index);
  static PyBlob Direct(Blob* blob);

  Blob& get() const;
  py::array Values(py::object self, bool diff) const;
  void Reshape(const std::vector<int>& shape);

 private:
  std::shared_ptr<NetOwner> owner_;
  int blob_id_ = -1, layer_id_ = -1, index_ = -1;
  Blob* direct_ = nullptr;
};

// A Layer as Python sees it: a view of a net's layer, or the base of a Python layer's class.
struct PyLayer {
  Layer* layer = nullptr;             // null until a PythonLayer adopts it, and after the net is gone
  std::shared_ptr<NetOwner> owner;    // net layers: for their parameter blobs
  int layer_id = -1;
  std::vector<std::shared_ptr<Blob>>* python_blobs = nullptr;  // Python layers: blobs add_blob made
  std::function<void(const std::vector<int>&)> add_blob;       // Python layers, during setup
};

// ---- module parts -----------------------------------------------------------------------------------
void DefineBlob(py::module_& m);
void DefineLayer(py::module_& m);
void DefineNet(py::module_& m);
void DefineSolver(py::module_& m);
// A Python Net object for a net a solver owns.
py::object WrapNet(std::shared_ptr<NetOwner> owner);
// The whole module: the functions above and the session functions.
void DefineModule(py::module_& m);

// The Python layer's hooks (python_layer.cpp): whether it runs inside `trainer` (no Python caller:
// errors become cortado::Error), and the object a net layer view returns for a Python layer.
py::object PythonLayerObject(Layer* layer);

}  // namespace cortado::python
