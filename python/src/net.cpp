// net.cpp — cortado.Net: the C++ half of pycaffe's Net (construction, passes, structure, weights).
// pycaffe.py adds the Python half (blobs, params, forward(**inputs), forward_all, ...).
#include "binding.hpp"
#include "cortado/error.hpp"
#include "cortado/hdf5.hpp"
#include "cortado/io.hpp"
#include "cortado/memory_data.hpp"

namespace cortado::python {
namespace {

// What a Python Net object holds.
struct PyNet {
  std::shared_ptr<NetOwner> owner;
};

NetParameter ReadNet(const std::string& path, int phase, int level, const std::vector<std::string>& stages) {
  NetParameter param;
  ReadProtoFromTextFile(path, &param);
  // A script reads any blob after a pass (pycaffe's behaviour): every blob keeps memory of its own
  // unless the prototxt asks for reuse.
  if (!param.has_memory_reuse()) param.set_memory_reuse(false);
  if (!param.has_fuse()) param.set_fuse(false);  // every blob's diff written, as Python reads them
  NetState* state = param.mutable_state();
  state->set_phase(static_cast<Phase>(phase));
  state->set_level(level);
  state->clear_stage();
  for (const auto& stage : stages) state->add_stage(stage);
  return param;
}

PyNet MakeNet(const std::string& path, int phase, int level, const std::vector<std::string>& stages,
              const std::string& weights) {
  auto owner = std::make_shared<OwnNet>(ReadNet(path, phase, level, stages), path);
  if (!weights.empty()) owner->param_net().CopyTrainedLayersFrom(weights);
  return PyNet{owner};
}

// pycaffe's two constructors, Net(network_file, phase, level=0, stages=None, weights=None) and
// Net(network_file, weights, phase), told apart by what comes second: a phase or a path.
PyNet NetFromArguments(py::object path, py::object phase, py::object level, py::object stages, py::object weights) {
  if (IsPath(phase) && !level.is_none()) {
    if (!stages.is_none() || !weights.is_none())
      Raise<py::type_error>("Net: Net(network_file, weights, phase) takes no stages or weights= besides");
    weights = phase, phase = level, level = py::none();
  }
  const std::string file = PathArg(path, "Net: network_file");
  const int phase_value = IntArg(phase, "Net: phase", TRAIN, TEST, "cortado.TRAIN or cortado.TEST");
  const int level_value = level.is_none() ? 0 : IntArg(level, "Net: level", INT_MIN, INT_MAX, "an integer");
  const std::vector<std::string> stage_names = NamesArg(stages, "Net: stages");
  const std::string weights_file = weights.is_none() ? "" : PathArg(weights, "Net: weights");
  return MakeNet(file, phase_value, level_value, stage_names, weights_file);
}

int CheckedLayer(Net& net, int i) {
  if (i < 0 || i >= static_cast<int>(net.layers().size()))
    Raise<py::index_error>("layer index ", i, " is out of range (", net.layers().size(), " layers)");
  return i;
}

PyNet& NetArg(py::handle value, const std::string& what) {
  if (!py::isinstance<PyNet>(value)) Raise<py::type_error>(what, " must be a cortado.Net, not ", Repr(value));
  return value.cast<PyNet&>();
}

std::string ShapeText(const py::array& array) {
  std::string text = "(";
  for (py::ssize_t i = 0; i < array.ndim(); ++i) text += (i ? ", " : "") + std::to_string(array.shape(i));
  return text + (array.ndim() == 1 ? ",)" : ")");
}

}  // namespace

py::object WrapNet(std::shared_ptr<NetOwner> owner) { return py::cast(PyNet{std::move(owner)}); }

void DefineNet(py::module_& m) {
  py::class_<PyNet>(m, "Net", py::dynamic_attr(), "A net built from a prototxt (pycaffe's Net)")
      .def(py::init(&NetFromArguments), py::arg("network_file"), py::arg("phase"), py::arg("level") = py::none(),
           py::arg("stages") = py::none(), py::arg("weights") = py::none(),
           "Net(network_file, phase, level=0, stages=None, weights=None) or Net(network_file, weights, phase)")
      // ---- passes
      .def("_forward", [](PyNet& n, int start, int end) {
        Net& net = n.owner->net();
        start = CheckedLayer(net, start), end = CheckedLayer(net, end);
        n.owner->BeforePass();
        const float loss = net.ForwardFromTo(start, end);
        n.owner->AfterPass();
        return loss;
      })
      .def("_backward", [](PyNet& n, int start, int end) {
        Net& net = n.owner->net();
        CORTADO_REQUIRE(net.runs_backward(), "backward: a TEST net has no backward pass; set force_backward: "
                        "true in the prototxt to differentiate it");
        start = CheckedLayer(net, start), end = CheckedLayer(net, end);
        n.owner->BeforePass();
        net.BackwardFromTo(start, end);
        n.owner->AfterPass();
      })
      .def("reshape", [](PyNet&) {}, "Nothing left to do: reshaping an input blob reshapes the net at once")
      .def("clear_param_diffs", [](PyNet& n) {
        n.owner->BeforePass();
        n.owner->param_net().ClearParamDiffs();
        n.owner->AfterPass();
      })
      // ---- structure
      .def_property_readonly("_blob_names", [](PyNet& n) { return n.owner->net().blob_names(); })
      .def_property_readonly("_layer_names", [](PyNet& n) { return n.owner->net().layer_names(); })
      .def_property_readonly("_inputs", [](PyNet& n) { return n.owner->InputBlobIds(); })
      .def_property_readonly("_outputs", [](PyNet& n) { return n.owner->net().output_blob_indices(); })
      .def_property_readonly("_blob_loss_weights", [](PyNet& n) { return n.owner->net().blob_loss_weights(); })
      .def("_top_ids", [](PyNet& n, int i) { return n.owner->net().top_ids()[CheckedLayer(n.owner->net(), i)]; })
      .def("_bottom_ids", [](PyNet& n, int i) {
        return n.owner->net().bottom_ids()[CheckedLayer(n.owner->net(), i)];
      })
      .def_property_readonly("_blobs", [](PyNet& n) {
        py::list blobs;
        for (size_t i = 0; i < n.owner->net().blob_names().size(); ++i)
          blobs.append(PyBlob::OfNet(n.owner, static_cast<int>(i)));
        return blobs;
      })
      .def_property_readonly("layers", [](PyNet& n) {
        py::list layers;
        Net& net = n.owner->net();
        for (size_t i = 0; i < net.layers().size(); ++i) {
          py::object python = PythonLayerObject(net.layers()[i].get());
          if (python) {
            layers.append(python);
          } else {
            layers.append(PyLayer{net.layers()[i].get(), n.owner, static_cast<int>(i)});
          }
        }
        return layers;
      })
      // ---- weights
      .def("save", [](PyNet& n, py::object filename) {
        const std::string path = PathArg(filename, "save: filename");
        n.owner->BeforePass();  // what the script wrote goes into the file
        NetParameter param;
        n.owner->param_net().ToProto(&param);
        WriteProtoToBinaryFile(param, path);
      })
      .def("copy_from", [](PyNet& n, py::object filename) {
        const std::string path = PathArg(filename, "copy_from: filename");
        n.owner->BeforePass();
        n.owner->param_net().CopyTrainedLayersFrom(path);
        n.owner->AfterPass();
      })
      .def("save_hdf5", [](PyNet& n, py::object filename) {
        const std::string path = PathArg(filename, "save_hdf5: filename");
        n.owner->BeforePass();
        NetParameter param;
        n.owner->param_net().ToProto(&param);
        WriteNetParameterToHdf5(param, path);
      })
      .def("load_hdf5", [](PyNet& n, py::object filename) {
        const std::string path = PathArg(filename, "load_hdf5: filename");
        n.owner->BeforePass();
        n.owner->param_net().CopyTrainedLayersFrom(ReadNetParameterFromHdf5(path));
        n.owner->AfterPass();
      })
      .def("share_with", [](PyNet& n, py::object other_net) {
        PyNet& other = NetArg(other_net, "share_with: other");
        auto* own = dynamic_cast<OwnNet*>(n.owner.get());
        CORTADO_REQUIRE(own != nullptr, "share_with: a solver's net already shares the solver's weights");
        other.owner->BeforePass();
        own->ShareWith(*other.owner, other.owner->keepalive());
      })
      .def("_set_input_arrays", [](PyNet& n, py::array_t<float, py::array::c_style> data,
                                   py::array_t<float, py::array::c_style> labels, int layer_id) {
        Net& net = n.owner->net();
        auto* layer = dynamic_cast<MemoryDataLayer*>(net.layers()[CheckedLayer(net, layer_id)].get());
        CORTADO_REQUIRE(layer != nullptr, "set_input_arrays: layer ", net.layer_names()[layer_id],
                        " is not a MemoryData layer");
        CORTADO_REQUIRE(data.ndim() == 4 && data.shape(1) == layer->channels() &&
                            data.shape(2) == layer->height() && data.shape(3) == layer->width(),
                        "set_input_arrays: data must be N x ", layer->channels(), " x ", layer->height(), " x ",
                        layer->width(), " for layer ", net.layer_names()[layer_id], ", not ", ShapeText(data));
        CORTADO_REQUIRE(labels.ndim() >= 1 && labels.shape(0) == data.shape(0) && labels.size() == data.shape(0),
                        "set_input_arrays: labels must hold one value per item (", data.shape(0), "), not ",
                        ShapeText(labels));
        layer->Reset(data.data(), labels.data(), static_cast<int>(data.shape(0)));
      });
}

}  // namespace cortado::python
