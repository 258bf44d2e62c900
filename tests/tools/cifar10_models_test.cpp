// cifar10_models_test.cpp — Caffe's CIFAR-10 "full" nets as models/cifar10/ ships them (Caffe's files
// with data paths under data/cifar10/): cifar10_full_train_test (LRN within channels) and
// cifar10_full_sigmoid_train_test_bn (BatchNorm) each train 20 iterations on the CPU with their
// solver's recipe, on a small CIFAR-shaped LMDB (random 3×32×32 images, 10 classes) whose mean
// compute_image_mean writes, then run their TEST net once (BatchNorm on its global statistics):
// exit 0, finite train and test losses.
#include <cmath>
#include <filesystem>

#include "cortado/io.hpp"
#include "test_util.hpp"

namespace cortado::test {

TEST(Cifar10Models, FullNetsTrainOnCifarShapedData) {
  const std::string dir = TempDir();
  const std::string data = dir + "/data/cifar10";
  std::filesystem::create_directories(data);
  WriteRandomImageLmdb(data + "/cifar10_train_lmdb", 200, 3, 32, 10, 1);
  WriteRandomImageLmdb(data + "/cifar10_test_lmdb", 100, 3, 32, 10, 2);
  const auto mean = RunCommand(ToolPath("compute_image_mean") + " " + data + "/cifar10_train_lmdb " + data +
                               "/mean.binaryproto");
  ASSERT_EQ(mean.exit_code, 0) << mean.err;

  const std::string models = SourceDir() + "/models/cifar10/";
  for (const auto& [solver_file, net_file] :
       {std::pair<std::string, std::string>{"cifar10_full_solver.prototxt", "cifar10_full_train_test.prototxt"},
        {"cifar10_full_sigmoid_solver_bn.prototxt", "cifar10_full_sigmoid_train_test_bn.prototxt"}}) {
    SCOPED_TRACE(net_file);
    // The shipped solver, shortened: 20 iterations on the CPU, one test batch at the end.
    SolverParameter solver;
    ReadProtoFromTextFile(models + solver_file, &solver);
    EXPECT_EQ(solver.net(), "models/cifar10/" + net_file);
    solver.set_net(models + net_file);
    solver.set_max_iter(20);
    solver.set_display(5);
    solver.set_test_interval(20);
    solver.set_test_iter(0, 1);
    solver.set_test_initialization(false);
    solver.set_snapshot(0);
    solver.set_snapshot_after_train(false);
    solver.set_snapshot_prefix(dir + "/snapshot");
    solver.set_random_seed(1);
    solver.set_solver_mode(SolverParameter::CPU);
    const std::string path = dir + "/" + solver_file;
    WriteProtoToTextFile(solver, path);

    const auto run = RunCommand("cd " + dir + " && " + ToolPath("trainer") + " train --solver=" + path);
    ASSERT_EQ(run.exit_code, 0) << run.err;
    EXPECT_NE(run.err.find("Iteration 20"), std::string::npos) << run.err;
    EXPECT_NE(run.err.find("Optimization Done."), std::string::npos) << run.err;
    const double train_loss = LastLoggedValue(run.err, "loss", "Train net output #[0-9]+: ");
    EXPECT_TRUE(std::isfinite(train_loss) && train_loss > 0) << "train loss " << train_loss << "\n" << run.err;
    const double test_loss = LastLoggedValue(run.err, "loss", "Test net output #[0-9]+: ");
    EXPECT_TRUE(std::isfinite(test_loss) && test_loss > 0) << "test loss " << test_loss << "\n" << run.err;
  }
}

}  // namespace cortado::test
