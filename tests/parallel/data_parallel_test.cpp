// data_parallel_test.cpp — data-parallel training in one process (parallel.hpp), on the CPU: the
// ThreadRanks collectives, the gradient buckets, and the contract that N ranks of batch B train the
// same weights as one solver of batch N·B, with the data split into blocks, the mean loss, and
// snapshots that resume exactly. (mpirun's processes: tests/tools/mpi_train_test.cpp.)
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "cortado/error.hpp"
#include "cortado/io.hpp"
#include "cortado/parallel.hpp"
#include "cortado/solver.hpp"
#include "test_util.hpp"

namespace cortado::test {
namespace {

// Runs body(rank) on n threads, one Ranks each; returns the errors they threw ("" for none).
std::vector<std::string> OnRanks(int n, const std::function<void(Ranks&)>& body) {
  ThreadRanksGroup group(n);
  std::vector<std::string> errors(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      std::unique_ptr<Ranks> ranks = group.Rank(r);
      try {
        body(*ranks);
      } catch (const std::exception& e) {
        errors[r] = e.what();
        group.Abort();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  return errors;
}

TEST(ThreadRanks, CollectivesSumBroadcastAndGather) {
  const int n = 3;
  std::vector<std::vector<double>> sums(n);
  std::vector<std::vector<float>> floats(n);
  std::vector<std::string> broadcast(n);
  std::vector<std::vector<std::string>> gathered(n);
  const auto errors = OnRanks(n, [&](Ranks& ranks) {
    const int r = ranks.rank();
    EXPECT_EQ(ranks.size(), n);
    std::vector<double> values = {1.0 * r, 10.0 + r};
    ranks.SumOnHost(values.data(), 2);
    sums[r] = values;
    std::vector<float> f = {0.5f * r, -1.0f};
    ranks.SumFloatsOnHost(f.data(), 2);
    floats[r] = f;
    char text[6] = "rankX";
    text[4] = static_cast<char>('0' + r);
    ranks.Broadcast(text, sizeof text, 1);
    broadcast[r] = text;
    gathered[r] = ranks.GatherOnRoot(std::string(r + 1, 'a' + r));
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(errors[r], "");
    EXPECT_EQ(sums[r], (std::vector<double>{3.0, 33.0}));
    EXPECT_EQ(floats[r], (std::vector<float>{1.5f, -3.0f}));
    EXPECT_EQ(broadcast[r], "rank1");
  }
  EXPECT_EQ(gathered[0], (std::vector<std::string>{"a", "bb", "ccc"}));
  EXPECT_TRUE(gathered[1].empty());
}

TEST(ThreadRanks, AnAbortedRankEndsTheOthersCollectives) {
  const auto errors = OnRanks(2, [](Ranks& ranks) {
    if (ranks.rank() == 1) Fail("rank 1 found a bad record");
    double value = 1;
    ranks.SumOnHost(&value, 1);  // rank 0 waits here until rank 1's failure ends the group
  });
  EXPECT_EQ(errors[1], "rank 1 found a bad record");
  EXPECT_NE(errors[0].find("another rank of this run failed"), std::string::npos) << errors[0];
}

// ---- training --------------------------------------------------------------------------------------

std::string WriteNet(const std::string& dir, int batch, bool dropout) {
  const std::string lmdb = dir + "/images_lmdb";
  if (!std::filesystem::exists(lmdb)) WriteRandomImageLmdb(lmdb, 53, 1, 12, 5, 11);
  return WriteSmallImageNet(dir, "net_b" + std::to_string(batch) + (dropout ? "_drop" : ""), lmdb, batch, dropout);
}

SolverParameter MakeSolver(const std::string& net, const std::string& prefix) {
  SolverParameter param = ParseSolver("type: 'SGD' base_lr: 0.05 momentum: 0.9 weight_decay: 0.001 "
                                      "lr_policy: 'fixed' display: 0 max_iter: 1000 random_seed: 31 "
                                      "solver_mode: CPU snapshot_after_train: false exchange_bucket_mb: 0.0002");
  param.set_net(net);
  param.set_snapshot_prefix(prefix);
  return param;
}

std::vector<float> Weights(Solver& solver) {
  return std::vector<float>(solver.net()->param_data(), solver.net()->param_data() + solver.net()->param_count());
}

// Tiny buckets (200 bytes) put every parameter in a bucket of its own, started while backward goes on.
TEST(DataParallel, TwoRanksOfBatch8TrainAsOneSolverOfBatch16) {
  const std::string dir = TempDir();
  Solver one(MakeSolver(WriteNet(dir, 16, false), dir + "/one"));
  one.Step(12);
  const std::vector<float> expected = Weights(one);
  const float expected_loss = one.smoothed_loss();

  std::vector<std::vector<float>> weights(2);
  std::vector<float> losses(2);
  const std::string half_batch = WriteNet(dir, 8, false);
  const auto errors = OnRanks(2, [&](Ranks& ranks) {
    Solver solver(MakeSolver(half_batch, dir + "/two"), "solver.prototxt", true, &ranks);
    solver.Step(12);
    weights[ranks.rank()] = Weights(solver);
    losses[ranks.rank()] = solver.smoothed_loss();
  });
  ASSERT_EQ(errors, (std::vector<std::string>{"", ""}));
  EXPECT_EQ(weights[0], weights[1]) << "every rank holds the same weights";
  ASSERT_EQ(weights[0].size(), expected.size());
  float worst = 0;
  for (size_t i = 0; i < expected.size(); ++i)
    worst = std::max(worst, std::fabs(weights[0][i] - expected[i]) / std::max(std::fabs(expected[i]), 1e-2f));
  EXPECT_LT(worst, 2e-4f) << "weights differ from one solver of the double batch beyond float rounding";
  EXPECT_NEAR(losses[0], expected_loss, 1e-4f * std::fabs(expected_loss)) << "the loss is the ranks' mean";
  EXPECT_EQ(losses[0], losses[1]);
}

TEST(DataParallel, BucketsCoverEveryParameterOnceLastLayersFirst) {
  const std::string dir = TempDir();
  Solver solver(MakeSolver(WriteNet(dir, 4, false), dir + "/b"));
  Net& net = *solver.net();
  for (size_t bytes : {size_t{1}, size_t{200}, size_t{4} << 20}) {
    const auto buckets = GradientExchange::PlanBuckets(net, bytes);
    ASSERT_FALSE(buckets.empty());
    int64_t end = net.param_count();
    int last_ready = INT32_MAX;
    for (const auto& bucket : buckets) {
      EXPECT_EQ(bucket.offset + bucket.count, end) << "contiguous, from the end of the buffer";
      EXPECT_LE(bucket.ready_after, last_ready) << "later layers' buckets first";
      last_ready = bucket.ready_after;
      end = bucket.offset;
    }
    EXPECT_EQ(end, 0);
    if (bytes == 1) {
      EXPECT_EQ(buckets.size(), net.learnable_params().size()) << "a parameter is never split";
      EXPECT_EQ(buckets.front().ready_after, net.layers().size() - 2) << "ip2's bias: after the layer before the loss";
    }
    if (bytes == (size_t{4} << 20)) EXPECT_EQ(buckets.size(), 1u);
  }
}

// Two ranks with dropout: a snapshot at iteration 6 resumed by two ranks ends where an uninterrupted run
// does, bit for bit (each rank's generator and the data position come back).
TEST(DataParallel, TwoRanksResumeExactlyFromASnapshot) {
  const std::string dir = TempDir();
  const std::string net = WriteNet(dir, 8, true);
  auto train = [&](const std::string& prefix, int iters, const std::string& resume) {
    std::vector<std::vector<float>> weights(2);
    std::vector<std::string> snapshots(2);
    const auto errors = OnRanks(2, [&](Ranks& ranks) {
      Solver solver(MakeSolver(net, dir + "/" + prefix), "solver.prototxt", true, &ranks);
      if (!resume.empty()) solver.Restore(resume);
      solver.Step(iters);
      snapshots[ranks.rank()] = solver.Snapshot();
      weights[ranks.rank()] = Weights(solver);
    });
    EXPECT_EQ(errors, (std::vector<std::string>{"", ""}));
    EXPECT_EQ(snapshots[1], "") << "rank 0 alone writes";
    return std::make_pair(weights[0], snapshots[0]);
  };
  const auto whole = train("whole", 12, "");
  const auto half = train("half", 6, "");
  SolverState state;
  ReadProtoFromBinaryFile(half.second, &state);
  EXPECT_EQ(state.ranks(), 2);
  EXPECT_EQ(std::count(state.rank_rng_states().begin(), state.rank_rng_states().end(), '\n'), 2);
  const auto resumed = train("resumed", 6, half.second);
  EXPECT_EQ(resumed.first, whole.first);
  EXPECT_NE(half.first, whole.first);
}

}  // namespace
}  // namespace cortado::test
