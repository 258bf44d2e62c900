// resume_test.cpp — the trainer resumes exactly, and signals never cost a snapshot:
//   a run resumed from iteration N ends with a .caffemodel byte-identical to an uninterrupted run
//   (SGD and Adam; LMDB data with rand_skip, random crops and mirrors, dropout, and a test net);
//   a solver state without reader positions (as Caffe writes them) still loads, with a note;
//   SIGINT stops with a loadable snapshot that resumes to the end; SIGKILL during a snapshot write
//   leaves the previous snapshot intact; a diverging run stops naming the layer.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "cortado/hdf5.hpp"
#include "cortado/io.hpp"
#include "test_util.hpp"

namespace cortado::test {

namespace {

namespace fs = std::filesystem;

std::string DataLayer(const std::string& lmdb, const char* phase, int batch, const char* transform) {
  std::ostringstream out;
  out << "layer { name: 'data' type: 'Data' top: 'data' top: 'label' include { phase: " << phase << " }\n"
      << "  transform_param { scale: 0.00390625 " << transform << " }\n"
      << "  data_param { source: '" << lmdb << "' batch_size: " << batch << " backend: LMDB rand_skip: 9 } }\n";
  return out.str();
}

// 37 records, batch 8: the epochs wrap in the middle of batches, and the test net reads the same data.
struct Schedule {
  int snapshot = 0;
  int max_iter = 20;
  int display = 5;
  int test_interval = 4;
  bool hdf5 = false;  // snapshot_format: HDF5
};

std::string WriteResumeSolver(const std::string& dir, const std::string& name, const std::string& type,
                              const Schedule& schedule) {
  const std::string lmdb = dir + "/images_lmdb";
  if (!fs::exists(lmdb)) WriteRandomImageLmdb(lmdb, 37, 1, 12, 5, 7);
  const std::string net_path = dir + "/net.prototxt";
  std::ofstream(net_path) << "name: 'resume'\n"
                          << DataLayer(lmdb, "TRAIN", 8, "crop_size: 10 mirror: true")
                          << DataLayer(lmdb, "TEST", 5, "crop_size: 10") << R"(
layer { name: "conv" type: "Convolution" bottom: "data" top: "conv"
        convolution_param { num_output: 4 kernel_size: 3 weight_filler { type: "xavier" } } }
layer { name: "relu" type: "ReLU" bottom: "conv" top: "conv" }
layer { name: "drop" type: "Dropout" bottom: "conv" top: "conv" dropout_param { dropout_ratio: 0.3 } }
layer { name: "ip" type: "InnerProduct" bottom: "conv" top: "ip" inner_product_param { num_output: 5 weight_filler { type: "xavier" } } }
layer { name: "acc" type: "Accuracy" bottom: "ip" bottom: "label" top: "accuracy" include { phase: TEST } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
)";
  const std::string path = dir + "/" + name + "_solver.prototxt";
  std::ofstream(path) << "net: '" << net_path << "'\n"
                      << "type: '" << type << "' base_lr: 0.01 momentum: 0.9 momentum2: 0.999 weight_decay: 0.0005\n"
                      << "lr_policy: 'inv' gamma: 0.0001 power: 0.75 max_iter: " << schedule.max_iter
                      << " display: " << schedule.display << "\n"
                      << "test_iter: 3 test_interval: " << schedule.test_interval
                      << " random_seed: 1234 solver_mode: CPU\n"
                      << "snapshot: " << schedule.snapshot << " snapshot_prefix: '" << dir << "/" << name << "'\n"
                      << (schedule.hdf5 ? "snapshot_format: HDF5\n" : "");
  return path;
}

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// The "Test net output" lines logged after iteration `from` (glog prefixes removed).
std::vector<std::string> TestOutputsAfter(const std::string& log, int from) {
  std::vector<std::string> lines;
  std::istringstream in(log);
  std::string line;
  int iteration = -1;
  while (std::getline(in, line)) {
    const size_t testing = line.find("] Iteration ");
    if (testing != std::string::npos && line.find("Testing net") != std::string::npos)
      iteration = std::stoi(line.substr(testing + 12));
    const size_t output = line.find("Test net output");
    if (output != std::string::npos && iteration > from) lines.push_back(line.substr(output));
  }
  return lines;
}

class ExactResume : public testing::TestWithParam<std::string> {};

TEST_P(ExactResume, ResumedRunEndsByteIdenticalToUninterruptedRun) {
  const std::string dir = TempDir();
  const std::string trainer = ToolPath("trainer");
  // The uninterrupted run snapshots at 9 on its way to 20; the resumed run starts from that snapshot.
  const auto straight = RunCommand(trainer + " train --solver=" + WriteResumeSolver(dir, "straight", GetParam(), {9}));
  ASSERT_EQ(straight.exit_code, 0) << straight.err;
  const std::string state = dir + "/straight_iter_9.solverstate";
  ASSERT_TRUE(fs::exists(state));
  const auto resumed = RunCommand(trainer + " train --solver=" + WriteResumeSolver(dir, "resumed", GetParam(), {}) +
                                  " --snapshot=" + state);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;

  const std::string expected = ReadBytes(dir + "/straight_iter_20.caffemodel");
  ASSERT_FALSE(expected.empty());
  EXPECT_TRUE(ReadBytes(dir + "/resumed_iter_20.caffemodel") == expected)
      << "the resumed run's weights differ from the uninterrupted run's";
  const auto straight_tests = TestOutputsAfter(straight.err, 9);
  EXPECT_EQ(straight_tests.size(), 3u * 2);  // tests at 12, 16, 20; accuracy and loss each
  EXPECT_EQ(TestOutputsAfter(resumed.err, 9), straight_tests);

  // The same state without reader positions (what Caffe writes) still loads, says that the data
  // restarts, and then — data and transforms no longer lined up — ends elsewhere.
  SolverState caffe_state;
  ReadProtoFromBinaryFile(state, &caffe_state);
  EXPECT_EQ(caffe_state.reader_position_size(), 2);  // the train and the test net's Data layers
  caffe_state.clear_reader_position();
  caffe_state.clear_reader_seed();
  const std::string caffe_state_path = dir + "/caffe_iter_9.solverstate";
  WriteProtoToBinaryFile(caffe_state, caffe_state_path);
  const auto restarted = RunCommand(trainer + " train --solver=" + WriteResumeSolver(dir, "restarted", GetParam(), {}) +
                                    " --snapshot=" + caffe_state_path);
  ASSERT_EQ(restarted.exit_code, 0) << restarted.err;
  EXPECT_NE(restarted.err.find("data restarts from the beginning"), std::string::npos) << restarted.err;
  EXPECT_FALSE(ReadBytes(dir + "/restarted_iter_20.caffemodel") == expected);
}

INSTANTIATE_TEST_SUITE_P(Solvers, ExactResume, testing::Values("SGD", "Adam"));

// The same through HDF5 snapshots (Caffe's .caffemodel.h5 / .solverstate.h5): the resumed run's
// weights equal the uninterrupted run's value for value (the files themselves hold HDF5 timestamps),
// and trainer test reads the .caffemodel.h5.
TEST(Hdf5Resume, SnapshotsResumeExactlyAndLoadAsWeights) {
  if (!HaveHdf5Support()) GTEST_SKIP() << "this build has no HDF5";
  const std::string dir = TempDir();
  const std::string trainer = ToolPath("trainer");
  Schedule straight_schedule{9};
  straight_schedule.hdf5 = true;
  const auto straight = RunCommand(trainer + " train --solver=" + WriteResumeSolver(dir, "straight", "Adam", straight_schedule));
  ASSERT_EQ(straight.exit_code, 0) << straight.err;
  EXPECT_NE(straight.err.find("Snapshotting to HDF5 file " + dir + "/straight_iter_9.caffemodel.h5"),
            std::string::npos) << straight.err;
  const std::string state = dir + "/straight_iter_9.solverstate.h5";
  ASSERT_TRUE(fs::exists(state));
  Schedule resumed_schedule;
  resumed_schedule.hdf5 = true;
  const auto resumed = RunCommand(trainer + " train --solver=" + WriteResumeSolver(dir, "resumed", "Adam", resumed_schedule) +
                                  " --snapshot=" + state);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(resumed.err.find("data restarts"), std::string::npos) << "reader positions lost in HDF5";

  const NetParameter expected = ReadNetParameterFromHdf5(dir + "/straight_iter_20.caffemodel.h5");
  const NetParameter actual = ReadNetParameterFromHdf5(dir + "/resumed_iter_20.caffemodel.h5");
  ASSERT_EQ(actual.layer_size(), expected.layer_size());
  ASSERT_GT(expected.layer_size(), 0);
  for (int i = 0; i < expected.layer_size(); ++i) {
    ASSERT_EQ(actual.layer(i).blobs_size(), expected.layer(i).blobs_size()) << expected.layer(i).name();
    for (int j = 0; j < expected.layer(i).blobs_size(); ++j)
      EXPECT_EQ(actual.layer(i).blobs(j).SerializeAsString(), expected.layer(i).blobs(j).SerializeAsString())
          << "layer " << expected.layer(i).name() << " blob " << j;
  }
  EXPECT_EQ(TestOutputsAfter(resumed.err, 9), TestOutputsAfter(straight.err, 9));

  const auto tested = RunCommand(trainer + " test --model=" + dir + "/net.prototxt --weights=" + dir +
                                 "/resumed_iter_20.caffemodel.h5 --iterations=2");
  ASSERT_EQ(tested.exit_code, 0) << tested.err;
  EXPECT_NE(tested.err.find("Copying source layer conv"), std::string::npos) << tested.err;
}

// ---- signals -------------------------------------------------------------------------------------

// A trainer running in the background, its stderr going to a file.
class BackgroundTrainer : public BackgroundCommand {
 public:
  BackgroundTrainer(const std::string& args, const std::string& log_path)
      : BackgroundCommand(ToolPath("trainer") + " " + args, log_path) {}
};

TEST(Signals, SigintStopsWithALoadableSnapshotThatResumesToTheEnd) {
  const std::string dir = TempDir();
  const std::string solver = WriteResumeSolver(dir, "long", "SGD", {0, 1000000, 1, 1000000});
  BackgroundTrainer run("train --solver=" + solver, dir + "/long.log");
  ASSERT_TRUE(run.WaitFor([&] { return run.LogHas("Iteration 30 ("); })) << ReadBytes(dir + "/long.log");
  run.Signal(SIGINT);
  EXPECT_EQ(run.Wait(), 0) << ReadBytes(dir + "/long.log");
  const std::string log = ReadBytes(dir + "/long.log");
  EXPECT_NE(log.find("Optimization stopped early."), std::string::npos) << log;
  std::string state;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().extension() == ".solverstate") state = entry.path().string();
  ASSERT_FALSE(state.empty()) << "no snapshot after SIGINT";
  SolverState saved;
  ReadProtoFromBinaryFile(state, &saved);
  EXPECT_GE(saved.iter(), 30);

  // Resuming from it completes the run.
  const std::string finish = WriteResumeSolver(dir, "finish", "SGD", {0, saved.iter() + 10, 1, 1000000});
  const auto resumed = RunCommand(ToolPath("trainer") + " train --solver=" + finish + " --snapshot=" + state);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.err.find("Optimization Done."), std::string::npos);
  EXPECT_TRUE(fs::exists(dir + "/finish_iter_" + std::to_string(saved.iter() + 10) + ".caffemodel"));
}

TEST(Signals, SighupSnapshotsAndTrainingGoesOn) {
  const std::string dir = TempDir();
  const std::string solver = WriteResumeSolver(dir, "hup", "SGD", {0, 1000000, 1, 1000000});
  BackgroundTrainer run("train --solver=" + solver, dir + "/hup.log");
  ASSERT_TRUE(run.WaitFor([&] { return run.LogHas("Iteration 10 ("); }));
  run.Signal(SIGHUP);
  ASSERT_TRUE(run.WaitFor([&] { return run.LogHas("Snapshotting solver state"); }));
  const std::string after = ReadBytes(dir + "/hup.log");
  ASSERT_TRUE(run.WaitFor([&] { return ReadBytes(dir + "/hup.log").size() > after.size() + 500; }))
      << "training did not go on after SIGHUP";
  EXPECT_EQ(ReadBytes(dir + "/hup.log").find("Optimization stopped early."), std::string::npos);
  run.Signal(SIGTERM);  // the default effect of SIGTERM, like SIGINT: stop with a snapshot
  EXPECT_EQ(run.Wait(), 0);
}

// A net with 4M parameters makes each snapshot take long enough to kill the trainer in the middle
// of writing one. The snapshot before it must load whole, and no file under a final name may be cut.
TEST(Signals, SigkillWhileSnapshottingLeavesThePreviousSnapshotIntact) {
  const std::string dir = TempDir();
  const std::string solver = dir + "/big_solver.prototxt";
  auto write_solver = [&](int max_iter) {
    std::ofstream(solver) << R"(
net_param {
  layer { name: "in" type: "DummyData" top: "x" top: "y"
          dummy_data_param { data_filler { type: "gaussian" } shape { dim: 2 dim: 2000 } shape { dim: 2 dim: 2000 } } }
  layer { name: "ip" type: "InnerProduct" bottom: "x" top: "z" inner_product_param { num_output: 2000 weight_filler { type: "gaussian" std: 0.01 } } }
  layer { name: "loss" type: "EuclideanLoss" bottom: "z" bottom: "y" top: "loss" }
}
base_lr: 0.001 lr_policy: "fixed" momentum: 0.9 display: 0 snapshot: 1
random_seed: 3 solver_mode: CPU snapshot_prefix: ")" << dir << "/big\"\nmax_iter: " << max_iter << "\n";
  };
  write_solver(1000000);
  BackgroundTrainer run("train --solver=" + solver, dir + "/big.log");
  auto temp_file_present = [&] {
    for (const auto& entry : fs::directory_iterator(dir))
      if (entry.path().string().find(".tmp-") != std::string::npos) return true;
    return false;
  };
  // Wait for a finished snapshot pair, then for the next write to be under way, and kill.
  ASSERT_TRUE(run.WaitFor([&] { return fs::exists(dir + "/big_iter_1.solverstate"); }));
  ASSERT_TRUE(run.WaitFor(temp_file_present)) << "never saw a snapshot being written";
  run.Signal(SIGKILL);
  EXPECT_EQ(run.Wait(), 128 + SIGKILL);

  // Every file under a final name loads whole; the newest solver state and its model load.
  int latest = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.find(".tmp-") != std::string::npos || name.rfind("big_iter_", 0) != 0) continue;
    if (entry.path().extension() == ".caffemodel") {
      NetParameter model;
      EXPECT_NO_THROW(ReadProtoFromBinaryFile(entry.path().string(), &model)) << name;
      ASSERT_EQ(model.layer_size(), 3) << name;
      EXPECT_EQ(model.layer(1).blobs(0).data_size(), 2000 * 2000) << name << " was cut short";
    } else if (entry.path().extension() == ".solverstate") {
      SolverState state;
      EXPECT_NO_THROW(ReadProtoFromBinaryFile(entry.path().string(), &state)) << name;
      EXPECT_EQ(state.history_size(), 2) << name;
      latest = std::max(latest, state.iter());
    }
  }
  ASSERT_GE(latest, 1);
  const std::string state = dir + "/big_iter_" + std::to_string(latest) + ".solverstate";
  write_solver(latest + 1);
  const auto resumed = RunCommand(ToolPath("trainer") + " train --solver=" + solver + " --snapshot=" + state);
  EXPECT_EQ(resumed.exit_code, 0) << resumed.err;
  fs::remove_all(dir);  // a few snapshots of 32 MB
}

// ---- divergence ----------------------------------------------------------------------------------

TEST(Divergence, ANonFiniteLossStopsNamingTheLayerAndSuggestsALowerRate) {
  const std::string dir = TempDir();
  const std::string solver = dir + "/diverge_solver.prototxt";
  std::ofstream(solver) << R"(
net_param {
  layer { name: "in" type: "DummyData" top: "x" top: "y"
          dummy_data_param { data_filler { type: "gaussian" std: 10 } shape { dim: 4 dim: 8 } shape { dim: 4 dim: 8 } } }
  layer { name: "hidden" type: "InnerProduct" bottom: "x" top: "h" inner_product_param { num_output: 8 weight_filler { type: "gaussian" std: 1 } } }
  layer { name: "out" type: "InnerProduct" bottom: "h" top: "z" inner_product_param { num_output: 8 weight_filler { type: "gaussian" std: 1 } } }
  layer { name: "loss" type: "EuclideanLoss" bottom: "z" bottom: "y" top: "loss" }
}
base_lr: 1000 lr_policy: "fixed" max_iter: 1000 display: 0 snapshot: 0 snapshot_after_train: false
random_seed: 3 solver_mode: CPU snapshot_prefix: ")" << dir << "/diverge\"\n";
  const auto r = RunCommand(ToolPath("trainer") + " train --solver=" + solver);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const std::string last = LastLine(r.err);
  EXPECT_NE(last.find(solver + ": training diverged at iteration "), std::string::npos) << last;
  EXPECT_NE(last.find("layer '"), std::string::npos) << last;
  EXPECT_NE(last.find("non-finite"), std::string::npos) << last;
  EXPECT_NE(last.find("Try a lower base_lr (now 1000)"), std::string::npos) << last;
  EXPECT_EQ(r.err.find("Check failed"), std::string::npos);
}

}  // namespace

}  // namespace cortado::test
