// opencv_dnn_test.cpp — OpenCV's dnn module, an independent reader of Caffe files, loads the LeNet
// .caffemodel Cortado trained (with Caffe's deploy lenet.prototxt) and scores the MNIST test set
// exactly as `trainer test` does. Needs data/mnist (scripts/test.sh prepares it) and python3-opencv
// (scripts/install_deps.sh installs it; the test is skipped, visibly, only when it is missing).
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>

#include "test_util.hpp"

namespace cortado::test {

namespace {

}  // namespace

TEST(OpenCvDnn, LoadsCortadosLeNetAndScoresMnistLikeTrainerTest) {
  if (std::system("/usr/bin/python3 -c 'import cv2' 2>/dev/null") != 0)
    GTEST_SKIP() << "python3-opencv is not installed (scripts/install_deps.sh installs it)";
  const std::string root = SourceDir();
  for (const char* file : {"/data/mnist/mnist_train_lmdb/data.mdb", "/data/mnist/mnist_test_lmdb/data.mdb",
                           "/data/mnist/t10k-images-idx3-ubyte", "/data/mnist/t10k-labels-idx1-ubyte"})
    ASSERT_TRUE(std::filesystem::exists(root + file)) << root + file << " is missing: scripts/test.sh prepares MNIST";

  // A short run of Caffe's LeNet recipe on Caffe's unchanged train/test net.
  const std::string dir = TempDir();
  const std::string solver = dir + "/lenet_solver.prototxt";
  std::ofstream(solver) << "net: 'models/mnist/lenet_train_test.prototxt'\n"
                        << "base_lr: 0.01 momentum: 0.9 weight_decay: 0.0005 lr_policy: 'inv' gamma: 0.0001 power: 0.75\n"
                        << "max_iter: 200 display: 100 snapshot: 0 random_seed: 1 solver_mode: CPU\n"
                        << "snapshot_prefix: '" << dir << "/lenet'\n";
  const std::string cd = "cd " + root + " && ";
  const auto train = RunCommand(cd + ToolPath("trainer") + " train --solver=" + solver);
  ASSERT_EQ(train.exit_code, 0) << train.err;
  const std::string weights = dir + "/lenet_iter_200.caffemodel";

  const auto test = RunCommand(cd + ToolPath("trainer") + " test --model=models/mnist/lenet_train_test.prototxt" +
                               " --weights=" + weights + " --iterations=100");
  ASSERT_EQ(test.exit_code, 0) << test.err;
  const double accuracy = LastLoggedValue(test.err, "accuracy");
  ASSERT_GT(accuracy, 0.9) << test.err;  // 200 steps of LeNet reach ~0.95

  const std::string script = root + "/tests/compat/opencv_mnist_accuracy.py";
  const std::string out = dir + "/opencv.txt";
  const auto cv = RunCommand("(" + cd + "/usr/bin/python3 " + script + " models/mnist/lenet.prototxt " + weights +
                             " data/mnist/t10k-images-idx3-ubyte data/mnist/t10k-labels-idx1-ubyte >" + out + ")");
  ASSERT_EQ(cv.exit_code, 0) << cv.err;
  std::ifstream in(out);
  std::string word_correct, word_of;
  int correct = -1, total = -1;
  in >> word_correct >> correct >> word_of >> total;
  ASSERT_EQ(total, 10000);
  // trainer test's accuracy is the mean over 100 batches of 100: a count of correct images / 10,000.
  EXPECT_EQ(correct, static_cast<int>(std::lround(accuracy * 10000)))
      << "OpenCV: " << correct << " of 10000 correct; trainer test: accuracy " << accuracy;
}

}  // namespace cortado::test
