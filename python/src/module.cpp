// module.cpp — the `cortado` module's session functions (pycaffe's set_mode_cpu, set_mode_gpu,
// set_device, set_random_seed, layer_type_list, has_nccl), ONNX export and import (for cortado.onnx),
// and the assembly of its parts.
#include <glog/logging.h>

#include "binding.hpp"
#include "cortado/error.hpp"
#include "cortado/gpu.hpp"
#include "cortado/layer_registry.hpp"
#include "cortado/onnx.hpp"

namespace cortado::python {

void DefineModule(py::module_& m) {
  m.doc() = "Cortado's Python interface: pycaffe's API (import cortado as caffe)";
  static py::exception<Error> error(m, "CortadoError", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      error(e.what());
    }
  });
  m.attr("TRAIN") = static_cast<int>(TRAIN);
  m.attr("TEST") = static_cast<int>(TEST);
  m.def("set_mode_cpu", [] { session().device = Device::kCPU; });
  m.def("set_mode_gpu", [] { session().device = Device::kGPU; });
  m.def("set_device", [](py::object device) {
    const int id = IntArg(device, "set_device: device", INT_MIN, INT_MAX, "a GPU number");
    CORTADO_REQUIRE(id >= 0, "set_device: GPU ", id, " does not exist");
    session().gpu_id = id;
  }, py::arg("device"));
  m.def("set_random_seed", [](int64_t seed) { session().seed = seed; });
  m.def("layer_type_list", [] { return LayerRegistry::Types(); });
  // pycaffe's NCCL class (multi-GPU training driven from Python) is not provided: several GPUs train
  // through trainer --gpu=0,1,... or mpirun.
  m.def("has_nccl", [] { return false; }, "Whether pycaffe's NCCL class is available: no (use trainer --gpu)");
  m.def("has_gpu", [] { return BuiltWithCuda(); }, "Whether this build has the GPU path (CUDA)");
  m.def("init_log", [](py::object level) {
    FLAGS_logtostderr = true;
    FLAGS_minloglevel = IntArg(level, "init_log: level", 0, 3, "0 (INFO), 1 (WARNING), 2 (ERROR) or 3 (FATAL)");
  }, py::arg("level") = 0, "Logs to stderr from glog level `level` up (0 INFO, 1 WARNING, 2 ERROR)");
  m.def("has_onnx", [] { return BuiltWithOnnx(); }, "Whether this build can export and import ONNX models");
  m.def("_export_onnx", [](py::object net, py::object weights, py::object onnx, bool dynamic_batch,
                           const std::vector<std::pair<std::string, std::vector<int>>>& input_shapes) {
    const std::string net_file = PathArg(net, "export: net_file");
    const std::string weights_file = weights.is_none() ? "" : PathArg(weights, "export: weights_file");
    const std::string onnx_file = PathArg(onnx, "export: onnx_file");
    OnnxExportOptions options;
    options.dynamic_batch = dynamic_batch;
    options.input_shapes = input_shapes;
    py::gil_scoped_release release;
    ExportOnnxFile(net_file, weights_file, onnx_file, options);
  });
  m.def("_import_onnx", [](py::object onnx, py::object net, py::object weights, py::object batch_size) {
    const std::string onnx_file = PathArg(onnx, "import_model: onnx_file");
    const std::string net_file = PathArg(net, "import_model: net_file");
    const std::string weights_file = PathArg(weights, "import_model: weights_file");
    OnnxImportOptions options;
    options.batch_size = IntArg(batch_size, "import_model: batch_size", 1);
    py::gil_scoped_release release;
    ImportOnnxFile(onnx_file, net_file, weights_file, options);
  });
  DefineBlob(m);
  DefineLayer(m);
  DefineNet(m);
  DefineSolver(m);
}

}  // namespace cortado::python
