// solver_prototxt_fuzzer.cpp — a solver prototxt, as trainer train reads one, trained for real on
// SmallNet (fuzz_util.hpp) when it names no net of its own: every field's checks, the learning-rate
// policies, the update rules, tests and snapshots. Bounded so that an input runs in milliseconds:
// at most 3 iterations, 2 test batches, iter_size 2; the nets it names by path become
// fuzz/small_net.prototxt; snapshots go to the work directory.
#include <algorithm>
#include <string>

#include "cortado/io.hpp"
#include "cortado/solver.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string small_net = cortado::fuzz::SmallNetPath();
  cortado::SolverParameter param;
  const std::string text(reinterpret_cast<const char*>(data), size);
  cortado::fuzz::Run([&] { cortado::ReadProtoFromTextString(text, &param, "solver.prototxt"); });
  if (!param.IsInitialized()) return 0;
  // Bounded work, and no file outside the work directory read or written.
  if (param.has_net()) param.set_net(small_net);
  if (param.has_train_net()) param.set_train_net(small_net);
  for (int i = 0; i < param.test_net_size(); ++i) param.set_test_net(i, small_net);
  if (!param.has_net() && !param.has_net_param() && !param.has_train_net() && !param.has_train_net_param())
    *param.mutable_net_param() = cortado::fuzz::SmallNet();
  param.set_max_iter(std::min(param.max_iter(), 3));
  for (int i = 0; i < param.test_iter_size(); ++i) param.set_test_iter(i, std::min(param.test_iter(i), 2));
  param.set_iter_size(std::min(param.iter_size(), 2));
  param.set_snapshot_prefix(cortado::fuzz::FreshFolder("snap") + "/s");
  param.set_solver_mode(cortado::SolverParameter::CPU);
  param.clear_weights();
  // What follows the clock would make one input's run differ from the next: a negative seed draws one
  // from it, and the metrics file's lines hold the time.
  if (param.random_seed() < 0) param.set_random_seed(1);
  param.set_write_metrics(false);
  cortado::fuzz::Run([&] {
    // An inline net too large to train in a moment is planned, not trained.
    if (cortado::Solver::PlanMemory(param, "solver.prototxt", nullptr) > (size_t{16} << 20)) return;
    cortado::Solver solver(param, "solver.prototxt");
    solver.Solve();
  });
  return 0;
}
