// parallel_gpu_test.cpp — data-parallel training on the GPU (parallel.hpp): the NCCL exchange with one
// rank trains what a solver alone trains, eagerly and captured in CUDA graphs, with buckets started
// inside backward and with iter_size; two ranks on the same GPU (where NCCL allows it) train as one
// solver of the double batch; `trainer train --gpu=0,0` says why it cannot; `mpirun -np 1 trainer
// train --gpu=0` bootstraps NCCL over MPI. The GPU machine has one GPU.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "cortado/parallel.hpp"
#include "cortado/solver.hpp"
#include "gpu_compare.hpp"

namespace cortado::test {
namespace {

std::string Net(const std::string& dir, int batch) {
  const std::string lmdb = dir + "/images_lmdb";
  if (!std::filesystem::exists(lmdb)) WriteRandomImageLmdb(lmdb, 53, 1, 12, 5, 11);
  return WriteSmallImageNet(dir, "net_b" + std::to_string(batch), lmdb, batch, false);
}

SolverParameter GpuSolver(const std::string& net, int iter_size) {
  SolverParameter param = ParseSolver("type: 'SGD' base_lr: 0.05 momentum: 0.9 weight_decay: 0.001 lr_policy: "
                                      "'fixed' display: 0 max_iter: 1000 random_seed: 31 solver_mode: GPU "
                                      "strict_fp32: true deterministic: true snapshot_after_train: false "
                                      "exchange_bucket_mb: 0.0002");
  param.set_net(net);
  param.set_iter_size(iter_size);
  return param;
}

std::vector<float> Weights(Solver& solver) {
  std::vector<float> host(static_cast<size_t>(solver.net()->param_count()));
  solver.context().Synchronize();
  GpuCopy(host.data(), solver.net()->param_data(), host.size() * sizeof(float));
  return host;
}

float WorstRelative(const std::vector<float>& a, const std::vector<float>& b) {
  float worst = a.size() == b.size() ? 0.0f : INFINITY;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    worst = std::max(worst, std::fabs(a[i] - b[i]) / std::max(std::fabs(b[i]), 1e-2f));
  return worst;
}

// n ranks (threads) of GpuSolver(net) on GPU 0; their weights after `steps`, or the first error.
std::vector<std::vector<float>> TrainRanks(int n, const SolverParameter& param, bool graphs, int steps,
                                           std::string* error) {
  ThreadRanksGroup group(n);
  std::vector<std::vector<float>> weights(n);
  std::vector<std::string> errors(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        std::unique_ptr<Ranks> ranks = group.Rank(r);
        Solver solver(param, "solver.prototxt", graphs, ranks.get());
        solver.Step(steps);
        weights[r] = Weights(solver);
      } catch (const std::exception& e) {
        errors[r] = e.what();
        group.Abort();
        AbortGpuExchanges();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (const std::string& e : errors)
    if (!e.empty() && error->empty()) *error = e;
  return weights;
}

TEST(ParallelGpu, OneNcclRankTrainsWhatASolverAloneTrains) {
  SKIP_WITHOUT_GPU();
  if (!BuiltWithNccl()) GTEST_SKIP() << "this build has no NCCL";
  const std::string dir = TempDir();
  for (int iter_size : {1, 2}) {
    const SolverParameter param = GpuSolver(Net(dir, 8), iter_size);
    Solver alone(param, "solver.prototxt", false);
    alone.Step(12);
    const std::vector<float> expected = Weights(alone);
    for (bool graphs : {false, true}) {
      SCOPED_TRACE("iter_size " + std::to_string(iter_size) + (graphs ? ", CUDA graphs" : ", eager"));
      std::string error;
      const auto weights = TrainRanks(1, param, graphs, 12, &error);
      ASSERT_EQ(error, "");
      EXPECT_LT(WorstRelative(weights[0], expected), 1e-6f) << "NCCL's average of one rank changed the gradients";
    }
  }
}

TEST(ParallelGpu, TwoRanksOnOneGpuTrainAsTheDoubleBatchWhereNcclAllowsIt) {
  SKIP_WITHOUT_GPU();
  if (!BuiltWithNccl()) GTEST_SKIP() << "this build has no NCCL";
  const std::string dir = TempDir();
  Solver alone(GpuSolver(Net(dir, 16), 1), "solver.prototxt", true);
  alone.Step(12);
  const std::vector<float> expected = Weights(alone);
  std::string error;
  const auto weights = TrainRanks(2, GpuSolver(Net(dir, 8), 1), true, 12, &error);
  if (!error.empty()) GTEST_SKIP() << "NCCL refuses two ranks on one GPU: " << error;
  EXPECT_EQ(weights[0], weights[1]);
  EXPECT_LT(WorstRelative(weights[0], expected), 2e-4f);
}

TEST(ParallelGpu, TrainerRefusesOneGpuTwiceAndBootstrapsNcclOverMpi) {
  SKIP_WITHOUT_GPU();
  const std::string dir = TempDir();
  std::ofstream(dir + "/solver.prototxt") << "net: '" << Net(dir, 8) << "'\nbase_lr: 0.05 lr_policy: 'fixed' "
                                          << "max_iter: 20 display: 10 random_seed: 3 snapshot_prefix: '" << dir
                                          << "/gpu'\n";
  const auto twice = RunCommand(ToolPath("trainer") + " train --solver=" + dir + "/solver.prototxt --gpu=0,0");
  EXPECT_EQ(twice.exit_code, 1);
  EXPECT_NE(twice.err.find("names GPU 0 twice: NCCL runs one rank per GPU"), std::string::npos) << twice.err;
  if (!BuiltWithMpi() || !BuiltWithNccl() || std::system("command -v mpirun >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "no mpirun, MPI or NCCL here";
  const auto mpi = RunCommand("mpirun --allow-run-as-root -np 1 " + ToolPath("trainer") + " train --solver=" + dir +
                              "/solver.prototxt --gpu=0");
  ASSERT_EQ(mpi.exit_code, 0) << mpi.err;
  EXPECT_NE(mpi.err.find("Data-parallel training: 1 rank (MPI, GPUs, NCCL)"), std::string::npos) << mpi.err;
  EXPECT_TRUE(std::filesystem::exists(dir + "/gpu_iter_20.caffemodel"));
}

}  // namespace
}  // namespace cortado::test
