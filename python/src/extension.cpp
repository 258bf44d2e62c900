// extension.cpp — the importable extension module cortado._cortado.
#include "binding.hpp"

PYBIND11_MODULE(_cortado, m) { cortado::python::DefineModule(m); }
