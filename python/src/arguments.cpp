// arguments.cpp — the checks of what a script passes to the bindings (counts, shapes, paths, names):
// a wrong argument is refused before anything changes, with one line naming it and what it got.
#include "binding.hpp"

namespace cortado::python {

std::string Repr(py::handle value) { return py::repr(value).cast<std::string>(); }

int IntArg(py::handle value, const std::string& what, int64_t low, int64_t high, const std::string& expected) {
  std::string wanted = expected;
  if (wanted.empty())
    wanted = high == INT_MAX ? "an integer >= " + std::to_string(low)
                             : "an integer from " + std::to_string(low) + " to " + std::to_string(high);
  PyObject* index = PyNumber_Index(value.ptr());  // what Python accepts as an integer: no floats, no str
  if (index == nullptr) {
    PyErr_Clear();
    Raise<py::type_error>(what, " must be ", wanted, ", not ", Repr(value));
  }
  const py::object number = py::reinterpret_steal<py::object>(index);
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(number.ptr(), &overflow);
  if (overflow != 0 || v < low || v > high) Raise<py::value_error>(what, " must be ", wanted, ", not ", Repr(value));
  return static_cast<int>(v);
}

std::vector<int> ShapeArg(const py::args& dims, const std::string& what) {
  py::sequence values = dims;  // reshape(2, 3), or reshape((2, 3)), reshape(other.shape), reshape(array)
  if (dims.size() == 1 && py::isinstance<py::sequence>(dims[0]) && !py::isinstance<py::str>(dims[0]))
    values = dims[0].cast<py::sequence>();
  std::vector<int> shape;
  for (size_t i = 0; i < values.size(); ++i)
    shape.push_back(IntArg(values[i], what + ": dimension " + std::to_string(i), 0));
  return shape;
}

bool IsPath(py::handle value) {
  return py::isinstance<py::str>(value) || py::isinstance<py::bytes>(value) || py::hasattr(value, "__fspath__");
}

std::string PathArg(py::handle value, const std::string& what) {
  if (!IsPath(value))
    Raise<py::type_error>(what, " must be a file path (str or os.PathLike), not ", Repr(value));
  const py::object path = py::module_::import("os").attr("fsdecode")(value);  // os.PathLike and bytes too
  return path.cast<std::string>();
}

std::vector<std::string> NamesArg(py::handle value, const std::string& what) {
  std::vector<std::string> names;
  if (value.is_none()) return names;
  if (py::isinstance<py::str>(value))
    Raise<py::type_error>(what, " must be a list of names, e.g. [", Repr(value), "], not the str ", Repr(value));
  if (!py::isinstance<py::iterable>(value))
    Raise<py::type_error>(what, " must be a list of names (str), not ", Repr(value));
  for (py::handle name : value) {
    if (!py::isinstance<py::str>(name)) Raise<py::type_error>(what, " must hold names (str), not ", Repr(name));
    names.push_back(name.cast<std::string>());
  }
  return names;
}

}  // namespace cortado::python
