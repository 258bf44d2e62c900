// onednn_math_stub.cpp — a build without oneDNN: OneDnnEnabled() is false, so nothing here is reached.
#include <glog/logging.h>

#include "../onednn_math.hpp"
#include "cortado/cpu_engine.hpp"

namespace cortado {

bool BuiltWithOneDnn() { return false; }

std::string OneDnnInstructionSet() { return "none (this build has no oneDNN)"; }
bool OneDnnRunsBf16() { return false; }

void OneDnnGemm(Trans, Trans, int, int, int, float, const float*, int, const float*, int, float, float*, int) {
  LOG(FATAL) << "OneDnnGemm called in a build without oneDNN";
}

}  // namespace cortado
