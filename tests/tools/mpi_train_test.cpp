// mpi_train_test.cpp — `mpirun -np 2 trainer train` on the CPU (parallel.hpp): two ranks of batch 8
// train the weights one process of batch 16 trains (over shared memory and over TCP, as between
// machines), rank 0 alone logs, a snapshot resumes exactly, and every failure — a bad record found by
// one rank, an error every rank finds, a killed rank — ends the run promptly with one line, while
// SIGINT to mpirun leaves a complete snapshot. Skipped where mpirun or MPI support is missing.
#include <signal.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cortado/data/lmdb.hpp"
#include "cortado/io.hpp"
#include "cortado/parallel.hpp"
#include "test_util.hpp"

namespace cortado::test {
namespace {

namespace fs = std::filesystem;

// Shared memory between the ranks unless `transport` says otherwise. (As root: --allow-run-as-root;
// on 2 cores: --oversubscribe.)
const char* const kTcp = "--mca btl tcp,self --mca btl_tcp_if_include lo";

std::string Mpirun(int ranks, const std::string& transport = "") {
  return "mpirun --allow-run-as-root --oversubscribe " + transport + " -np " + std::to_string(ranks) + " " +
         ToolPath("trainer");
}

#define SKIP_WITHOUT_MPIRUN()                                                                    \
  do {                                                                                           \
    if (!BuiltWithMpi()) GTEST_SKIP() << "this build has no MPI";                                \
    if (std::system("command -v mpirun >/dev/null 2>&1") != 0) GTEST_SKIP() << "no mpirun here"; \
  } while (0)

struct Schedule {
  int max_iter = 20;
  int snapshot = 0;
  int display = 5;
};

std::string WriteSolver(const std::string& dir, const std::string& name, const std::string& net, const Schedule& s) {
  const std::string path = dir + "/" + name + "_solver.prototxt";
  std::ofstream(path) << "net: '" << net << "'\n"
                      << "type: 'SGD' base_lr: 0.05 momentum: 0.9 weight_decay: 0.001 lr_policy: 'fixed'\n"
                      << "max_iter: " << s.max_iter << " display: " << s.display << " snapshot: " << s.snapshot
                      << "\nrandom_seed: 31 solver_mode: CPU snapshot_prefix: '" << dir << "/" << name << "'\n";
  return path;
}

std::string ImageLmdb(const std::string& dir) {
  const std::string lmdb = dir + "/images_lmdb";
  if (!fs::exists(lmdb)) WriteRandomImageLmdb(lmdb, 53, 1, 12, 5, 11);
  return lmdb;
}

std::vector<float> ModelWeights(const std::string& caffemodel) {
  NetParameter model;
  ReadProtoFromBinaryFile(caffemodel, &model);
  std::vector<float> values;
  for (const auto& layer : model.layer())
    for (const auto& blob : layer.blobs()) values.insert(values.end(), blob.data().begin(), blob.data().end());
  return values;
}

int Count(const std::string& text, const std::string& what) {
  int count = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++count;
  return count;
}

TEST(MpiTrain, TwoRanksOfBatch8TrainTheWeightsOfOneProcessOfBatch16) {
  SKIP_WITHOUT_MPIRUN();
  const std::string dir = TempDir();
  const std::string lmdb = ImageLmdb(dir);
  const auto one = RunCommand(ToolPath("trainer") + " train --solver=" +
                              WriteSolver(dir, "one", WriteSmallImageNet(dir, "b16", lmdb, 16, false), {}));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const std::vector<float> expected = ModelWeights(dir + "/one_iter_20.caffemodel");
  const std::string half_batch = WriteSmallImageNet(dir, "b8", lmdb, 8, false);
  for (const std::string transport : {"", kTcp}) {
    SCOPED_TRACE(transport.empty() ? "shared memory" : "TCP");
    const auto two = RunCommand("timeout 300 " + Mpirun(2, transport) + " train --solver=" +
                                WriteSolver(dir, "two", half_batch, {}));
    ASSERT_EQ(two.exit_code, 0) << two.err;
    const std::vector<float> weights = ModelWeights(dir + "/two_iter_20.caffemodel");
    ASSERT_EQ(weights.size(), expected.size());
    float worst = 0;
    for (size_t i = 0; i < weights.size(); ++i)
      worst = std::max(worst, std::fabs(weights[i] - expected[i]) / std::max(std::fabs(expected[i]), 1e-2f));
    EXPECT_LT(worst, 2e-4f) << "the ranks' weights differ from one process's of the double batch";

    // Rank 0 alone logs: the training lines appear as often as in one process, the setup says how the
    // batch is split, and the losses shown are the ranks' means (close to one process's).
    EXPECT_EQ(Count(two.err, "Data-parallel training: 2 ranks (MPI, CPUs), batch 8 per rank, effective batch 16"), 1)
        << two.err;
    EXPECT_EQ(Count(two.err, "Train net output #0"), Count(one.err, "Train net output #0"));
    EXPECT_EQ(Count(two.err, "Optimization Done."), 1);
    EXPECT_NE(two.err.find("Gradient exchange: waited"), std::string::npos);
    EXPECT_NEAR(LastLoggedValue(two.err, "loss", "Train net output #0: "),
                LastLoggedValue(one.err, "loss", "Train net output #0: "), 1e-3);
  }
}

// With dropout (each rank draws its own masks) and rand_skip, crops and mirrors: two ranks resumed
// from a snapshot at iteration 10 end with the .caffemodel of an uninterrupted run, byte for byte.
TEST(MpiTrain, RanksResumeExactlyFromASnapshot) {
  SKIP_WITHOUT_MPIRUN();
  const std::string dir = TempDir();
  const std::string net = WriteSmallImageNet(dir, "drop", ImageLmdb(dir), 8, true);
  const auto straight = RunCommand("timeout 300 " + Mpirun(2) + " train --solver=" +
                                   WriteSolver(dir, "straight", net, {20, 10}));
  ASSERT_EQ(straight.exit_code, 0) << straight.err;
  SolverState state;
  ReadProtoFromBinaryFile(dir + "/straight_iter_10.solverstate", &state);
  EXPECT_EQ(state.ranks(), 2) << "a snapshot records the number of ranks";
  const auto resumed = RunCommand("timeout 300 " + Mpirun(2) + " train --solver=" +
                                  WriteSolver(dir, "resumed", net, {20, 0}) + " --snapshot=" + dir +
                                  "/straight_iter_10.solverstate");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  const std::string expected = ReadFile(dir + "/straight_iter_20.caffemodel");
  ASSERT_FALSE(expected.empty());
  EXPECT_TRUE(ReadFile(dir + "/resumed_iter_20.caffemodel") == expected)
      << "the resumed ranks' weights differ from the uninterrupted run's";
}

// Rank r of 2 with batch 8 reads records [s + 16k + 8r, s + 16k + 8r + 8) of the 53, where rand_skip
// draws s below 7: record 15 is rank 1's in the first iteration, and rank 0's blocks reach it no
// sooner than the fifth.
TEST(MpiTrain, ABadRecordOnOneRankEndsEveryRankWithOneLine) {
  SKIP_WITHOUT_MPIRUN();
  const std::string dir = TempDir();
  const std::string lmdb = dir + "/bad_lmdb";
  {
    LmdbWriter writer(lmdb, "test");
    for (int i = 0; i < 53; ++i) {
      Datum datum;
      const int channels = i == 15 ? 2 : 1;
      datum.set_channels(channels), datum.set_height(12), datum.set_width(12), datum.set_label(i % 5);
      datum.set_data(std::string(channels * 144, static_cast<char>(i)));
      char key[16];
      std::snprintf(key, sizeof key, "%08d", i);
      writer.Put(key, datum.SerializeAsString());
    }
    writer.Finish();
  }
  const std::string net = WriteSmallImageNet(dir, "net", lmdb, 8, false);
  const std::string solver = WriteSolver(dir, "bad", net, {1000, 0, 1});
  const auto run = RunCommand("timeout 120 " + Mpirun(2) + " train --solver=" + solver);
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.exit_code, 124) << "the ranks hung";
  EXPECT_EQ(Count(run.err, "trainer: error:"), 1) << run.err;
  EXPECT_NE(run.err.find("trainer: error: rank 1: " + net + ": layer data (Data): record '00000015' has shape 2×12×12"),
            std::string::npos)
      << run.err;
  EXPECT_EQ(run.err.find("stack trace"), std::string::npos) << run.err;
  EXPECT_EQ(run.err.find("Check failed"), std::string::npos) << run.err;
}

TEST(MpiTrain, AnErrorEveryRankFindsIsReportedOnce) {
  SKIP_WITHOUT_MPIRUN();
  const std::string dir = TempDir();
  const std::string net = dir + "/typo.prototxt";
  std::ofstream(net) << "layer { name: 'in' type: 'Input' top: 'x' input_param { shape { dim: 2 dim: 3 } } }\n"
                     << "layer { name: 'ip' type: 'InnerProdcut' bottom: 'x' top: 'y' }\n";
  const auto run = RunCommand("timeout 120 " + Mpirun(2) + " train --solver=" + WriteSolver(dir, "typo", net, {}));
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.exit_code, 124) << "the ranks hung";
  EXPECT_EQ(Count(run.err, "trainer: error:"), 1) << run.err;
  EXPECT_NE(run.err.find("InnerProdcut"), std::string::npos) << run.err;
}

// The processes whose command line starts with `program` and contains `argument`.
std::vector<int> ProcessesOf(const std::string& program, const std::string& argument) {
  std::vector<int> pids;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "cmdline", std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    const std::string cmdline = bytes.str();
    if (cmdline.rfind(program + '\0', 0) == 0 && cmdline.find(argument) != std::string::npos)
      pids.push_back(std::stoi(name));
  }
  return pids;
}

TEST(MpiTrain, AKilledRankEndsTheRun) {
  SKIP_WITHOUT_MPIRUN();
  const std::string dir = TempDir();
  const std::string solver =
      WriteSolver(dir, "long", WriteSmallImageNet(dir, "net", ImageLmdb(dir), 8, false), {1000000, 0, 1});
  BackgroundCommand run(Mpirun(2) + " train --solver=" + solver, dir + "/long.log");
  ASSERT_TRUE(run.WaitFor([&] { return run.LogHas("Iteration 10 ("); })) << run.Log();
  const std::vector<int> ranks = ProcessesOf(ToolPath("trainer"), solver);
  ASSERT_EQ(ranks.size(), 2u);
  kill(ranks.back(), SIGKILL);
  const int code = run.WaitAtMost(30);
  EXPECT_NE(code, -1) << "mpirun still runs 30 s after a rank was killed";
  EXPECT_NE(code, 0);
}

// Open MPI's mpirun sends SIGTERM to the ranks on SIGINT and SIGKILL a moment later: the ranks agree
// to stop at the end of an iteration and rank 0 writes the snapshot before that. This net logs every
// iteration, thousands a second, into the pipe mpirun no longer reads: the ranks must not block on it.
TEST(MpiTrain, SigintToMpirunStopsEveryRankWithACompleteSnapshot) {
  SKIP_WITHOUT_MPIRUN();
  const std::string dir = TempDir();
  const std::string net = WriteSmallImageNet(dir, "net", ImageLmdb(dir), 8, true);
  BackgroundCommand run(Mpirun(2) + " train --solver=" + WriteSolver(dir, "stop", net, {1000000, 0, 1}),
                        dir + "/stop.log");
  ASSERT_TRUE(run.WaitFor([&] { return run.LogHas("Iteration 20 ("); })) << run.Log();
  run.Signal(SIGINT);
  EXPECT_NE(run.WaitAtMost(30), -1) << "mpirun still runs 30 s after SIGINT";
  // (mpirun stops forwarding the ranks' output on SIGINT: the snapshot, not the log, tells.)
  std::string state;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().extension() == ".solverstate") state = entry.path().string();
  ASSERT_FALSE(state.empty()) << "no snapshot after SIGINT\n" << run.Log();
  SolverState saved;
  ReadProtoFromBinaryFile(state, &saved);
  EXPECT_GE(saved.iter(), 20);
  EXPECT_EQ(saved.ranks(), 2);
  const auto resumed = RunCommand("timeout 300 " + Mpirun(2) + " train --solver=" +
                                  WriteSolver(dir, "finish", net, {saved.iter() + 5, 0, 1}) + " --snapshot=" + state);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_TRUE(fs::exists(dir + "/finish_iter_" + std::to_string(saved.iter() + 5) + ".caffemodel"));
}

}  // namespace
}  // namespace cortado::test
