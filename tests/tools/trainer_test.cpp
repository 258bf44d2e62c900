// trainer_test.cpp — the trainer binary end to end: a tiny net trains, snapshots where Caffe puts
// them, resumes and fine-tunes. Its answers to mistakes are tested in bad_input_test.cpp.
#include <filesystem>
#include <fstream>

#include "test_util.hpp"

namespace cortado::test {

namespace {

const char* kTinySolver = R"(
net_param {
  name: "tiny"
  layer { name: "in" type: "DummyData" top: "x" top: "y"
          dummy_data_param { data_filler { type: "constant" value: 0.5 } shape { dim: 4 dim: 3 } shape { dim: 4 dim: 2 } } }
  layer { name: "ip" type: "InnerProduct" bottom: "x" top: "z" inner_product_param { num_output: 2 weight_filler { type: "xavier" } } }
  layer { name: "loss" type: "EuclideanLoss" bottom: "z" bottom: "y" top: "loss" }
}
base_lr: 0.1 lr_policy: "fixed" momentum: 0.9 max_iter: 20 display: 10 snapshot: 10
random_seed: 1 solver_mode: CPU
)";

std::string WriteSolver(const std::string& dir) {
  const std::string path = dir + "/tiny_solver.prototxt";
  std::ofstream(path) << kTinySolver << "snapshot_prefix: \"" << dir << "/tiny\"\n";
  return path;
}

}  // namespace

TEST(Trainer, TrainsSnapshotsAndLogsLikeCaffe) {
  const std::string dir = TempDir();
  const auto r = RunCommand(ToolPath("trainer") + " train --solver=" + WriteSolver(dir));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("Solving tiny"), std::string::npos);
  EXPECT_NE(r.err.find("Learning Rate Policy: fixed"), std::string::npos);
  EXPECT_NE(r.err.find("Iteration 10 ("), std::string::npos);
  EXPECT_NE(r.err.find("Iteration 10, lr = 0.1"), std::string::npos);
  EXPECT_NE(r.err.find("    Train net output #0: loss = "), std::string::npos);
  EXPECT_NE(r.err.find("Snapshotting to binary proto file " + dir + "/tiny_iter_10.caffemodel"), std::string::npos);
  EXPECT_NE(r.err.find("Optimization Done."), std::string::npos);
  for (const char* file : {"/tiny_iter_10.caffemodel", "/tiny_iter_10.solverstate", "/tiny_iter_20.caffemodel",
                           "/tiny_iter_20.solverstate"})
    EXPECT_TRUE(std::filesystem::exists(dir + file)) << file;
  // The glog prefix has no year: "I1122 10:48:59.461234 ...".
  EXPECT_TRUE(r.err.size() > 6 && r.err[0] == 'I' && r.err[5] == ' ') << r.err.substr(0, 40);
}

TEST(Trainer, ResumesFromSnapshotAndFinetunesFromWeights) {
  const std::string dir = TempDir();
  const std::string solver = WriteSolver(dir);
  ASSERT_EQ(RunCommand(ToolPath("trainer") + " train --solver=" + solver).exit_code, 0);
  const auto resumed = RunCommand(ToolPath("trainer") + " train --solver=" + solver + " --snapshot=" + dir +
                                  "/tiny_iter_10.solverstate");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.err.find("Restoring previous solver status from"), std::string::npos);
  EXPECT_EQ(resumed.err.find("Iteration 0,"), std::string::npos);  // starts at 10, not 0
  const auto tuned = RunCommand(ToolPath("trainer") + " train --solver=" + solver + " --weights=" + dir +
                                "/tiny_iter_20.caffemodel");
  ASSERT_EQ(tuned.exit_code, 0) << tuned.err;
  EXPECT_NE(tuned.err.find("Copying source layer ip"), std::string::npos);
}

}  // namespace cortado::test
