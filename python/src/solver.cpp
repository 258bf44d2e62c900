// solver.cpp — cortado.Solver and its nets: pycaffe's SGDSolver & co. (the subclasses that fix the
// solver type are in pycaffe.py), get_solver, step, solve, apply_update, snapshot, restore.
#include "binding.hpp"
#include "cortado/error.hpp"
#include "cortado/solver.hpp"

namespace cortado::python {
namespace {

struct SolverHolder {
  HostMirrors mirrors;             // one set for the train and test nets: they share the parameters
  std::unique_ptr<Solver> solver;  // destroyed before the mirrors
};

// A solver's train or test net.
class SolverNet : public NetOwner {
 public:
  SolverNet(std::shared_ptr<SolverHolder> holder, Net* net) : holder_(std::move(holder)), net_(net) {}
  Net& net() override { return *net_; }
  std::shared_ptr<void> keepalive() override { return holder_; }
  Device device() override { return holder_->solver->context().device(); }
  HostMirrors& mirrors() override { return holder_->mirrors; }

 private:
  std::shared_ptr<SolverHolder> holder_;
  Net* net_;
};

struct PySolver {
  std::shared_ptr<SolverHolder> holder;
  Solver& solver() const { return *holder->solver; }
  // Around the solver's own passes.
  template <typename F>
  void Run(F&& body) {
    const bool gpu = solver().context().device() == Device::kGPU;
    if (gpu) holder->mirrors.Upload();
    body();
    if (gpu) holder->mirrors.MarkStale();
  }
};

PySolver MakeSolver(const std::string& path, const std::string& type) {
  SolverParameter param = ReadSolverParameter(path);
  if (!type.empty()) {
    param.set_type(type);
    param.clear_solver_type();
  }
  // pycaffe: the mode and device come from set_mode_* and set_device, not from the file.
  const Session& s = session();
  param.set_solver_mode(s.device == Device::kGPU ? SolverParameter::GPU : SolverParameter::CPU);
  param.set_device_id(s.gpu_id);
  if (s.seed >= 0 && !param.has_random_seed()) param.set_random_seed(s.seed);
  if (!param.has_memory_reuse()) param.set_memory_reuse(false);  // every blob readable from Python
  if (!param.has_fuse()) param.set_fuse(false);  // every blob's diff written, as Python reads them
  auto holder = std::make_shared<SolverHolder>();
  holder->solver = std::make_unique<Solver>(param, path);
  return PySolver{holder};
}

}  // namespace

void DefineSolver(py::module_& m) {
  py::class_<PySolver>(m, "Solver", py::dynamic_attr(), "Trains a net as its solver prototxt says (pycaffe's Solver)")
      .def(py::init([](py::object filename, const std::string& type) {
             return MakeSolver(PathArg(filename, "Solver: filename"), type);
           }),
           py::arg("filename"), py::arg("type") = "")
      .def_property_readonly("net", [](PySolver& s) {
        return WrapNet(std::make_shared<SolverNet>(s.holder, s.solver().net()));
      })
      .def_property_readonly("test_nets", [](PySolver& s) {
        py::list nets;
        for (const auto& net : s.solver().test_nets()) nets.append(WrapNet(std::make_shared<SolverNet>(s.holder, net.get())));
        return nets;
      })
      .def_property_readonly("iter", [](PySolver& s) { return s.solver().iter(); })
      .def_property_readonly("type", [](PySolver& s) { return s.solver().param().type(); })
      .def("step", [](PySolver& s, py::object iters) {
             // As in Caffe, step(0) does nothing; the count is checked so that iter cannot overflow.
             const int count = IntArg(iters, "step: iters", 0, INT_MAX - s.solver().iter());
             s.Run([&] { s.solver().Step(count); });
           },
           py::arg("iters"))
      .def("solve", [](PySolver& s, py::object resume) {
             const std::string path = resume.is_none() ? "" : PathArg(resume, "solve: resume_file");
             s.Run([&] { s.solver().Solve(path); });
           },
           py::arg("resume_file") = py::none())
      .def("apply_update", [](PySolver& s) { s.Run([&] { s.solver().UpdateFromCurrentGradients(); }); })
      .def("snapshot", [](PySolver& s) {
        std::string path;
        s.Run([&] { path = s.solver().Snapshot(); });
        return path;
      })
      .def("restore", [](PySolver& s, py::object filename) {
             const std::string path = PathArg(filename, "restore: filename");
             s.Run([&] { s.solver().Restore(path); });
           },
           py::arg("filename"));
}

}  // namespace cortado::python
