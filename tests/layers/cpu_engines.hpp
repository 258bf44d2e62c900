// cpu_engines.hpp — for the tests of the layers with CPU engines (Convolution, Pooling, LRN): the
// process's engine setting for one test, and the prototxt engines each test runs with.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cortado/cpu_engine.hpp"

namespace cortado::test {

// The process's CPU engine for one test, restored after it.
class CpuEngineScope {
 public:
  explicit CpuEngineScope(CpuEngine engine) : saved_(CpuEngineSetting()) { SetCpuEngine(engine); }
  ~CpuEngineScope() { SetCpuEngine(saved_); }

 private:
  CpuEngine saved_;
};

#define SKIP_WITHOUT_ONEDNN() \
  if (!BuiltWithOneDnn()) GTEST_SKIP() << "this build has no oneDNN (libdnnl-dev)"

// The `engine:` values of Pooling and LRN to test: Cortado's loops, and oneDNN where built.
inline std::vector<std::string> PrototxtCpuEngines() {
  if (BuiltWithOneDnn()) return {"CAFFE", "ONEDNN"};
  return {"CAFFE"};
}

}  // namespace cortado::test
