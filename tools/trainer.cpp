// trainer.cpp — the command line: `trainer train --solver=S [--weights=W | --snapshot=X]`.
// A user's mistake ends with one line on stderr and exit code 1 (see tool.hpp).
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <map>
#include <sstream>
#include <string>

#include "cortado/error.hpp"
#include "cortado/io.hpp"
#include "cortado/solver.hpp"
#include "cortado/tool.hpp"

DEFINE_string(solver, "", "The solver prototxt (train)");
DEFINE_string(weights, "", "Comma-separated .caffemodel files to start from (fine-tuning)");
DEFINE_string(snapshot, "", "A .solverstate to resume training from");
DEFINE_int32(level, 0, "Net state level, for include/exclude rules");
DEFINE_string(stage, "", "Comma-separated net state stages, for include/exclude rules");

namespace {

using cortado::Fail;

std::vector<std::string> SplitCommas(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

int Train() {
  CORTADO_REQUIRE(!FLAGS_solver.empty(), "train needs --solver=SOLVER.prototxt");
  CORTADO_REQUIRE(FLAGS_snapshot.empty() || FLAGS_weights.empty(),
                  "give either --snapshot (resume) or --weights (fine-tune), not both");
  cortado::SolverParameter param = cortado::ReadSolverParameter(FLAGS_solver);
  param.mutable_train_state()->set_level(FLAGS_level);
  for (const auto& stage : SplitCommas(FLAGS_stage)) param.mutable_train_state()->add_stage(stage);
  std::vector<std::string> weights = SplitCommas(FLAGS_weights);
  if (weights.empty() && FLAGS_snapshot.empty())
    for (const auto& w : param.weights()) weights.push_back(w);
  for (const auto& w : weights)
    CORTADO_REQUIRE(cortado::FileExists(w), "weights file '", w, "' does not exist");
  CORTADO_REQUIRE(FLAGS_snapshot.empty() || cortado::FileExists(FLAGS_snapshot), "snapshot '",
                  FLAGS_snapshot, "' does not exist");
  LOG(INFO) << "Using " << (param.solver_mode() == cortado::SolverParameter::GPU ? "GPU" : "CPU")
            << " solver_mode from " << FLAGS_solver;
  cortado::Solver solver(param, FLAGS_solver);
  for (const auto& w : weights) {
    LOG(INFO) << "Finetuning from " << w;
    solver.net()->CopyTrainedLayersFrom(w);
  }
  solver.Solve(FLAGS_snapshot);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const char* usage =
      "command line brew\n"
      "usage: trainer <command> <args>\n\n"
      "commands:\n"
      "  train           train or finetune a model\n";
  return cortado::RunTool(argc, argv, usage, [&](int argc, char** argv) {
    if (argc != 2) {
      gflags::ShowUsageWithFlagsRestrict(argv[0], "trainer");
      return 1;
    }
    const std::string command = argv[1];
    if (command == "train") return Train();
    Fail("unknown command '", command, "' (valid commands: train)");
  });
}
