// bad_input.hpp — what the end-to-end tests of a user's mistakes share: running the trainer and
// checking that it failed as a mistake must (exit 1, one "trainer: error: ..." line after the log, no
// trace), small nets, and a workspace with a solver and a planted snapshot a failing run must not touch.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <regex>
#include <sstream>
#include <string>

#include "test_util.hpp"

namespace cortado::test {

inline bool Has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Runs `<tool> <args>` (a built tool) and checks that it failed as a user's mistake must: exit code 1,
// every stderr line but the last a glog INFO/WARNING/ERROR line, the last "<tool>: error: ...", and no
// CHECK failure, signal dump or uncaught exception. Returns the message after that prefix.
inline std::string ToolError(const std::string& tool, const std::string& args) {
  const CommandResult r = RunCommand(ToolPath(tool) + " " + args);
  EXPECT_EQ(r.exit_code, 1) << args << "\n" << r.err;
  EXPECT_FALSE(Has(r.err, "Check failed")) << r.err;
  EXPECT_FALSE(Has(r.err, "*** ")) << r.err;  // glog's failure and signal dumps
  EXPECT_FALSE(Has(r.err, "terminate called")) << r.err;
  const std::string last = LastLine(r.err);
  std::istringstream lines(r.err.substr(0, r.err.rfind(last)));
  const std::regex glog_line("^[IWE][0-9]{4} .*");
  for (std::string line; std::getline(lines, line);)
    EXPECT_TRUE(std::regex_match(line, glog_line)) << "not a log line: " << line << "\n" << r.err;
  const std::string prefix = tool + ": error: ";
  EXPECT_EQ(last.rfind(prefix, 0), 0u) << r.err;
  return last.rfind(prefix, 0) == 0 ? last.substr(prefix.size()) : last;
}

inline std::string TrainerError(const std::string& args) { return ToolError("trainer", args); }

// DummyData x (4×inputs) and y (4×2), InnerProduct ip (2 outputs), EuclideanLoss.
inline std::string TinyNet(int inputs = 3) {
  return R"(name: "tiny"
layer { name: "in" type: "DummyData" top: "x" top: "y"
        dummy_data_param { data_filler { type: "constant" value: 0.5 }
                           shape { dim: 4 dim: )" + std::to_string(inputs) + R"( } shape { dim: 4 dim: 2 } } }
layer { name: "ip" type: "InnerProduct" bottom: "x" top: "z"
        inner_product_param { num_output: 2 weight_filler { type: "xavier" } } }
layer { name: "loss" type: "EuclideanLoss" bottom: "z" bottom: "y" top: "loss" }
)";
}

// A Data layer "data" (data_param and transform_param bodies as given), InnerProduct "ip" to 10
// classes, optionally Accuracy "accuracy" (before the loss, so it runs first), SoftmaxWithLoss "loss".
inline std::string ClassifierNet(const std::string& data_param, const std::string& transform = "",
                          bool with_accuracy = false) {
  return R"(name: "classifier"
layer { name: "data" type: "Data" top: "data" top: "label"
        data_param { )" + data_param + " } transform_param { " + transform + R"( } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "score" inner_product_param { num_output: 10 } }
)" + (with_accuracy ? R"(layer { name: "accuracy" type: "Accuracy" bottom: "score" bottom: "label" top: "acc" }
)" : "") + R"(layer { name: "loss" type: "SoftmaxWithLoss" bottom: "score" bottom: "label" top: "loss" }
)";
}

inline std::string LmdbSource(const std::string& path) { return "source: '" + path + "' backend: LMDB batch_size: 2"; }

// A directory with net.prototxt and solver.prototxt (2 iterations on the CPU, a snapshot after each
// into snap/tiny_iter_N.*), plus a planted earlier snapshot that a failing run must leave alone.
struct Workspace {
  explicit Workspace(const std::string& net_text, const std::string& solver_extra = "") {
    WriteFile(net, net_text);
    WriteFile(solver, "net: \"" + net + "\"\nbase_lr: 0.01\nlr_policy: \"fixed\"\nmax_iter: 2\n" +
                          "display: 1\nsnapshot: 1\nsnapshot_prefix: \"" + snap + "/tiny\"\n" +
                          "solver_mode: CPU\nrandom_seed: 1\n" + solver_extra);
    std::filesystem::create_directories(snap);
  }
  std::string Train(const std::string& flags = "") const { return "train --solver=" + solver + " " + flags; }
  // Writes snap/tiny_iter_1.{caffemodel,solverstate}: the names a run of this solver writes first.
  void PlantSnapshot() const {
    WriteFile(snap + "/tiny_iter_1.caffemodel", kPlantedModel);
    WriteFile(snap + "/tiny_iter_1.solverstate", kPlantedState);
  }
  void ExpectPlantedSnapshotUntouched() const {
    EXPECT_EQ(ReadFile(snap + "/tiny_iter_1.caffemodel"), kPlantedModel);
    EXPECT_EQ(ReadFile(snap + "/tiny_iter_1.solverstate"), kPlantedState);
    EXPECT_FALSE(std::filesystem::exists(snap + "/tiny_iter_2.caffemodel"));
  }

  static constexpr const char* kPlantedModel = "earlier weights, not to be overwritten";
  static constexpr const char* kPlantedState = "earlier state, not to be overwritten";
  std::string dir = NewTempDir();
  std::string net = dir + "/net.prototxt";
  std::string solver = dir + "/solver.prototxt";
  std::string snap = dir + "/snap";
};

// Trains the tiny net for 2 iterations and returns its final weights: a real .caffemodel.
inline std::string TrainedTinyModel(const Workspace& ws) {
  const CommandResult r = RunCommand(ToolPath("trainer") + " " + ws.Train());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string model = ws.snap + "/tiny_iter_2.caffemodel";
  EXPECT_TRUE(std::filesystem::exists(model));
  return model;
}

inline bool RunningAsRoot() { return geteuid() == 0; }  // root reads chmod 000 files: skip those cases

}  // namespace cortado::test
