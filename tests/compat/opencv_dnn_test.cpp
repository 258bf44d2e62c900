// opencv_dnn_test.cpp — OpenCV's dnn module, an independent reader of Caffe files, loads the LeNet
// .caffemodel Cortado trained (with Caffe's deploy lenet.prototxt) and scores the MNIST test set
// exactly as `trainer test` does. Needs data/mnist (scripts/test.sh prepares it) and python3-opencv
// (scripts/install_deps.sh installs it; the test is skipped, visibly, only when it is missing).
// A LeNet trained in bf16 for Caffe's 10,000 iterations reaches Caffe's accuracy, and OpenCV scores its
// (float) .caffemodel as trainer test does. Both LeNets, written as ONNX models by export_onnx and read
// by OpenCV's ONNX importer, score the same count of test images too.
//
// And Caffe's AlexNet, GoogLeNet and ResNet-50 deploy nets, with weights Cortado gave them and saved,
// map the same input to the same softmax in Cortado and in OpenCV (max relative error ≤ 1e-4).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>

#include "cortado/io.hpp"
#include "cortado/upgrade.hpp"
#include "test_util.hpp"

namespace cortado::test {

namespace {

bool HaveOpenCv() { return std::system("/usr/bin/python3 -c 'import cv2' 2>/dev/null") == 0; }

// |a − b| / max(|a|, |b|), the largest over the elements (0 where both are 0).
double MaxRelativeError(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double scale = std::max(std::fabs(a[i]), std::fabs(b[i]));
    if (scale > 0) worst = std::max(worst, std::fabs(double(a[i]) - b[i]) / scale);
  }
  return worst;
}

}  // namespace

class OpenCvDeployNets : public ::testing::TestWithParam<std::string> {};

TEST_P(OpenCvDeployNets, GiveOpenCvsSoftmaxWithCortadosWeights) {
  if (!HaveOpenCv()) GTEST_SKIP() << "python3-opencv is not installed (scripts/install_deps.sh installs it)";
  const std::string dir = TempDir();
  const std::string deploy = SourceDir() + "/tests/compat/caffe-models/" + GetParam();
  NetParameter param;
  ReadProtoFromTextFile(deploy, &param);
  if (NetNeedsUpgrade(param)) UpgradeNet(&param, deploy);
  param.mutable_state()->set_phase(TEST);
  Context ctx(Device::kCPU, 1);
  Net net(param, ctx, deploy);
  net.AllocateOwnArena();
  FillTrainedLikeWeights(net, 11);
  // The deploy net's own input shape; pixels of a mean-subtracted image's range.
  Blob& input = *net.blob_by_name(net.blob_names()[0]);
  ASSERT_EQ(input.num_axes(), 4);
  std::mt19937 rng(5);
  FillUniform(&input, rng, -100.0f, 100.0f);
  const std::vector<float> pixels = input.ReadData();
  WriteFile(dir + "/input.f32", std::string(reinterpret_cast<const char*>(pixels.data()), pixels.size() * sizeof(float)));
  // The classifier (the last layer with weights) rescaled so that its logits spread over about 3
  // units: a softmax saturated to 1e-37 would compare the libraries' exp underflow, not their nets.
  const int classifier = [&] {
    for (int i = static_cast<int>(net.layers().size()) - 1; i >= 0; --i)
      if (!net.layers()[i]->blobs().empty()) return i;
    return -1;
  }();
  ASSERT_GE(classifier, 0);
  net.Forward();
  const std::vector<float> logits = net.top_vecs()[classifier][0]->ReadData();
  double sum = 0, sumsq = 0;
  for (float v : logits) sum += v, sumsq += double(v) * v;
  const double mean = sum / logits.size(), spread = std::sqrt(std::max(sumsq / logits.size() - mean * mean, 1e-12));
  for (auto& blob : net.layers()[classifier]->blobs()) {
    std::vector<float> values = blob->ReadData();
    for (float& v : values) v = static_cast<float>(v * 3.0 / spread);
    blob->WriteData(values);
  }
  NetParameter trained;
  net.ToProto(&trained);
  const std::string weights = dir + "/weights.caffemodel";
  WriteProtoToBinaryFile(trained, weights);

  net.Forward();
  const std::vector<float> ours = net.output_blobs().back()->ReadData();

  std::ostringstream command;
  command << "/usr/bin/python3 " << SourceDir() << "/tests/compat/opencv_forward.py " << deploy << " " << weights
          << " " << dir << "/input.f32";
  for (int d = 0; d < 4; ++d) command << " " << input.shape(d);
  command << " " << dir << "/opencv.f32";
  const auto cv = RunCommand(command.str());
  ASSERT_EQ(cv.exit_code, 0) << cv.err;
  const std::string bytes = ReadFile(dir + "/opencv.f32");
  ASSERT_EQ(bytes.size(), ours.size() * sizeof(float)) << "OpenCV's output has another size";
  std::vector<float> theirs(ours.size());
  std::memcpy(theirs.data(), bytes.data(), bytes.size());
  const double error = MaxRelativeError(ours, theirs);
  std::printf("%s: %zu softmax values, max relative error %.3g\n", GetParam().c_str(), ours.size(), error);
  EXPECT_LE(error, 1e-4);
  // Not a degenerate softmax: the weights give each image a clear, input-dependent answer.
  EXPECT_GT(*std::max_element(ours.begin(), ours.end()), 2.0f / (ours.size() / input.shape(0)));
}

INSTANTIATE_TEST_SUITE_P(AlexNetGoogLeNetResNet50, OpenCvDeployNets,
                         ::testing::Values("models/bvlc_alexnet/deploy.prototxt",
                                           "models/bvlc_googlenet/deploy.prototxt",
                                           "resnet/ResNet-50-deploy.prototxt"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return std::string(info.index == 0 ? "AlexNet" : info.index == 1 ? "GoogLeNet" : "ResNet50");
                         });

namespace {

struct LeNetScores {
  double trainer = -1;            // trainer test's accuracy, in the precision it trained in
  double trainer_float = -1;      // trainer test's accuracy of the same weights in float
  int opencv_correct = -1;        // of the 10,000 test images, in OpenCV's dnn
  int opencv_onnx_correct = -1;   // the same, from the ONNX model export_onnx wrote
};

// Caffe's LeNet recipe on Caffe's unchanged train/test net for `iterations` steps in `precision`
// (trainer --precision), then the weights scored by trainer test (in that precision and in float) and
// by OpenCV's dnn on Caffe's deploy lenet.prototxt and on its ONNX export.
LeNetScores TrainLeNetAndScore(int iterations, const std::string& precision) {
  const std::string root = SourceDir();
  for (const char* file : {"/data/mnist/mnist_train_lmdb/data.mdb", "/data/mnist/mnist_test_lmdb/data.mdb",
                           "/data/mnist/t10k-images-idx3-ubyte", "/data/mnist/t10k-labels-idx1-ubyte"})
    EXPECT_TRUE(std::filesystem::exists(root + file)) << root + file << " is missing: scripts/test.sh prepares MNIST";
  LeNetScores scores;
  const std::string dir = TempDir();
  const std::string solver = dir + "/lenet_solver.prototxt";
  const std::string iters = std::to_string(iterations);
  std::ofstream(solver) << "net: 'models/mnist/lenet_train_test.prototxt'\n"
                        << "base_lr: 0.01 momentum: 0.9 weight_decay: 0.0005 lr_policy: 'inv' gamma: 0.0001 power: 0.75\n"
                        << "max_iter: " << iters << " display: 1000 snapshot: 0 random_seed: 1 solver_mode: CPU\n"
                        << "snapshot_prefix: '" << dir << "/lenet'\n";
  const std::string cd = "cd " + root + " && ";
  const std::string flag = precision.empty() ? "" : " --precision=" + precision;
  const auto train = RunCommand(cd + ToolPath("trainer") + " train --solver=" + solver + flag);
  EXPECT_EQ(train.exit_code, 0) << train.err;
  const std::string weights = dir + "/lenet_iter_" + iters + ".caffemodel";
  auto test = [&](const std::string& test_flag) {
    const auto run = RunCommand(cd + ToolPath("trainer") + " test --model=models/mnist/lenet_train_test.prototxt" +
                                " --weights=" + weights + " --iterations=100" + test_flag);
    EXPECT_EQ(run.exit_code, 0) << run.err;
    return LastLoggedValue(run.err, "accuracy");
  };
  scores.trainer = test(flag);
  scores.trainer_float = precision.empty() ? scores.trainer : test("");
  const auto opencv_correct = [&](const std::string& model_args) {
    const std::string script = root + "/tests/compat/opencv_mnist_accuracy.py";
    const std::string out = dir + "/opencv.txt";
    const auto cv = RunCommand("(" + cd + "/usr/bin/python3 " + script + " " + model_args +
                               " data/mnist/t10k-images-idx3-ubyte data/mnist/t10k-labels-idx1-ubyte >" + out + ")");
    EXPECT_EQ(cv.exit_code, 0) << cv.err;
    std::ifstream in(out);
    std::string word_correct, word_of;
    int correct = -1, total = -1;
    in >> word_correct >> correct >> word_of >> total;
    EXPECT_EQ(total, 10000);
    return correct;
  };
  scores.opencv_correct = opencv_correct("models/mnist/lenet.prototxt " + weights);
  const std::string onnx = dir + "/lenet.onnx";
  const auto exported = RunCommand(cd + ToolPath("export_onnx") + " models/mnist/lenet.prototxt " + weights + " " + onnx);
  EXPECT_EQ(exported.exit_code, 0) << exported.err;
  scores.opencv_onnx_correct = opencv_correct("--onnx " + onnx);
  return scores;
}

}  // namespace

TEST(OpenCvDnn, LoadsCortadosLeNetAndScoresMnistLikeTrainerTest) {
  if (!HaveOpenCv())
    GTEST_SKIP() << "python3-opencv is not installed (scripts/install_deps.sh installs it)";
  const LeNetScores scores = TrainLeNetAndScore(200, "");
  ASSERT_GT(scores.trainer, 0.9);  // 200 steps of LeNet reach ~0.95
  // trainer test's accuracy is the mean over 100 batches of 100: a count of correct images / 10,000.
  EXPECT_EQ(scores.opencv_correct, static_cast<int>(std::lround(scores.trainer * 10000)))
      << "OpenCV: " << scores.opencv_correct << " of 10000 correct; trainer test: accuracy " << scores.trainer;
  EXPECT_EQ(scores.opencv_onnx_correct, scores.opencv_correct) << "OpenCV on the ONNX export";
}

// LeNet trained in bf16 (activations and gradients stored in 16 bits, fp32 master weights) for
// Caffe's 10,000 iterations reaches Caffe's accuracy; its .caffemodel is plain float, so OpenCV scores
// it as trainer test does in float, and within a few images of trainer test in bf16.
TEST(OpenCvDnn, LoadsABf16TrainedLeNetAtTheTrainersAccuracy) {
  if (!HaveOpenCv())
    GTEST_SKIP() << "python3-opencv is not installed (scripts/install_deps.sh installs it)";
  const LeNetScores scores = TrainLeNetAndScore(10000, "bf16");
  std::printf("LeNet bf16, 10000 iterations: trainer test bf16 %.4f, float %.4f; OpenCV %d of 10000, "
              "from its ONNX export %d\n", scores.trainer, scores.trainer_float, scores.opencv_correct,
              scores.opencv_onnx_correct);
  EXPECT_GE(scores.trainer, 0.985);
  EXPECT_EQ(scores.opencv_correct, static_cast<int>(std::lround(scores.trainer_float * 10000)));
  EXPECT_NEAR(scores.opencv_correct / 10000.0, scores.trainer, 0.002);
  EXPECT_EQ(scores.opencv_onnx_correct, static_cast<int>(std::lround(scores.trainer_float * 10000)));
}

}  // namespace cortado::test
