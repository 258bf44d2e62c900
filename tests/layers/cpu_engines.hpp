// cpu_engines.hpp — for the tests of the layers with CPU engines (Convolution, Pooling, LRN): the
// process's engine setting for one test, and the prototxt engines each test runs with.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "cortado/cpu_engine.hpp"
#include "test_util.hpp"

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

// The rule every layer with CPU engines keeps, under each CPU engine setting: `engine: CAFFE` gives the
// layer's own engine (`own`), `engine: ONEDNN` gives "onednn" where built, and without an engine the
// setting decides: `own` under im2col (and without oneDNN), "onednn" under onednn, one of `choices`
// under auto, the same for two layers of one shape. layer_text(engine) is the layer's prototxt with
// that engine ("": none); `more` runs a layer's own checks under each setting.
inline void ExpectThePrototxtsEngineThenTheSettingDecide(const std::function<std::string(const std::string&)>& layer_text,
                                                         const std::vector<int>& shape, const std::string& own,
                                                         const std::set<std::string>& choices,
                                                         const std::function<void()>& more = [] {}) {
  for (CpuEngine setting : {CpuEngine::kAuto, CpuEngine::kIm2col, CpuEngine::kOneDnn}) {
    if (setting == CpuEngine::kOneDnn && !BuiltWithOneDnn()) continue;
    CpuEngineScope scope(setting);
    SCOPED_TRACE(CpuEngineName(setting));
    EXPECT_STREQ(LayerFixture(layer_text("CAFFE"), {shape}).layer().chosen_engine(), own.c_str());
    if (BuiltWithOneDnn()) EXPECT_STREQ(LayerFixture(layer_text("ONEDNN"), {shape}).layer().chosen_engine(), "onednn");
    more();
    LayerFixture chosen(layer_text(""), {shape}), again(layer_text(""), {shape});
    const std::string engine = chosen.layer().chosen_engine();
    if (setting == CpuEngine::kIm2col || !BuiltWithOneDnn()) EXPECT_EQ(engine, own);
    if (setting == CpuEngine::kOneDnn) EXPECT_EQ(engine, "onednn");
    EXPECT_TRUE(choices.count(engine)) << engine;
    EXPECT_EQ(engine, again.layer().chosen_engine()) << "a shape is timed once: its layers agree";
  }
}

}  // namespace cortado::test
