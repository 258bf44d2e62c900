// embedded.cpp — the same module built into `trainer` as _cortado_embedded, for the Python layers of
// nets the trainer runs: the package's __init__.py uses it there instead of loading _cortado.so, so
// that one copy of Cortado (one layer registry, one cortado.Layer) is in the process.
#include <pybind11/embed.h>

#include "binding.hpp"

PYBIND11_EMBEDDED_MODULE(_cortado_embedded, m) { cortado::python::DefineModule(m); }
