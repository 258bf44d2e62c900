// siamese_mnist_test.cpp — Caffe's siamese MNIST example, unchanged (models/siamese/: Data layers with
// no backend, so LevelDB, fed by convert_mnist_siamese_data's pair databases), trained on REAL MNIST
// for a short CPU run with the recipe of mnist_siamese_solver.prototxt. The contrastive loss must fall
// well below its start, and in the trained 2-D embedding (the "feat" and "feat_p" blobs of the TEST
// net) same-digit test pairs must lie much closer together than different-digit ones. Needs data/mnist
// (scripts/test.sh prepares it); fails, naming the file, when it is missing.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "cortado/context.hpp"
#include "cortado/io.hpp"
#include "cortado/net.hpp"
#include "cortado/solver.hpp"
#include "test_util.hpp"

namespace cortado::test {

namespace {

namespace fs = std::filesystem;

// The "loss = X" of every display line ("Iteration N (...), loss = X" or "Iteration 0, loss = X").
std::vector<double> DisplayedLosses(const std::string& log) {
  static const std::regex line(R"(\] Iteration \d+.*, loss = ([-+0-9.eE]+|nan|inf))");
  std::vector<double> losses;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), line); it != std::sregex_iterator(); ++it)
    losses.push_back(std::stod((*it)[1].str()));
  return losses;
}

}  // namespace

TEST(SiameseMnist, CaffesExampleLearnsAnEmbeddingOnRealMnist) {
  const std::string root = SourceDir();
  for (const char* file : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                           "t10k-labels-idx1-ubyte"})
    ASSERT_TRUE(fs::exists(root + "/data/mnist/" + file))
        << root << "/data/mnist/" << file << " is missing: scripts/test.sh prepares MNIST";

  // A work folder laid out like the repository (models/ linked, data/mnist_siamese/ made here), so the
  // prototxts' relative paths are used as they are.
  const std::string work = TempDir();
  fs::create_directory_symlink(root + "/models", work + "/models");
  fs::create_directories(work + "/data/mnist_siamese");
  for (const std::string split : {"train", "test"}) {
    const std::string prefix = root + "/data/mnist/" + (split == "train" ? "train" : "t10k");
    const auto made = RunCommand(ToolPath("convert_mnist_siamese_data") + " " + prefix + "-images-idx3-ubyte " +
                                 prefix + "-labels-idx1-ubyte " + work + "/data/mnist_siamese/mnist_siamese_" +
                                 split + "_leveldb");
    ASSERT_EQ(made.exit_code, 0) << made.err;
  }

  // Caffe's solver with a short schedule: no test passes, no intermediate snapshots, the CPU.
  const int iterations = 500;
  SolverParameter solver = ReadSolverParameter(root + "/models/siamese/mnist_siamese_solver.prototxt");
  ASSERT_EQ(solver.net(), "models/siamese/mnist_siamese_train_test.prototxt");
  solver.clear_test_iter();
  solver.clear_test_interval();
  solver.set_max_iter(iterations);
  solver.set_snapshot(0);
  solver.set_snapshot_prefix(work + "/siamese");
  solver.set_solver_mode(SolverParameter::CPU);
  solver.set_random_seed(1);
  WriteProtoToTextFile(solver, work + "/solver.prototxt");
  const auto train = RunCommand("cd " + work + " && " + ToolPath("trainer") + " train --solver=solver.prototxt");
  ASSERT_EQ(train.exit_code, 0) << train.err;

  const std::vector<double> losses = DisplayedLosses(train.err);
  ASSERT_EQ(losses.size(), size_t(iterations / solver.display() + 1)) << train.err;
  // Each displayed loss is one batch's: compare the start with the mean of the last three displays.
  const double first = losses.front();
  const double last = (losses.end()[-1] + losses.end()[-2] + losses.end()[-3]) / 3;
  EXPECT_GT(first, 0.1) << train.err;  // dissimilar pairs of untrained features cost ~(margin − d)²/2
  EXPECT_LT(last, 0.35 * first) << train.err;

  // The trained embedding of 2,000 test pairs: distances between same-digit pairs against the others.
  NetParameter net_param;
  ReadProtoFromTextFile(root + "/models/siamese/mnist_siamese_train_test.prototxt", &net_param);
  for (LayerParameter& layer : *net_param.mutable_layer())
    if (layer.has_data_param())
      layer.mutable_data_param()->set_source(work + "/" + layer.data_param().source());
  net_param.mutable_state()->set_phase(TEST);
  Context ctx(Device::kCPU, 1);
  Net net(net_param, ctx, "mnist_siamese_train_test.prototxt");
  net.AllocateOwnArena();
  net.CopyTrainedLayersFrom(work + "/siamese_iter_" + std::to_string(iterations) + ".caffemodel");
  double same = 0, different = 0;
  int same_count = 0, different_count = 0;
  for (int batch = 0; batch < 20; ++batch) {
    net.Forward();
    const Blob& feat = *net.blob_by_name("feat");
    const Blob& feat_p = *net.blob_by_name("feat_p");
    const Blob& sim = *net.blob_by_name("sim");
    ASSERT_EQ(feat.shape(), (std::vector<int>{100, 2}));
    for (int n = 0; n < 100; ++n) {
      const double dx = feat.data()[2 * n] - feat_p.data()[2 * n];
      const double dy = feat.data()[2 * n + 1] - feat_p.data()[2 * n + 1];
      const double distance = std::sqrt(dx * dx + dy * dy);
      if (sim.data()[n] == 1) {
        same += distance, ++same_count;
      } else {
        different += distance, ++different_count;
      }
    }
  }
  ASSERT_GT(same_count, 100);  // about a tenth of random pairs share a digit
  ASSERT_GT(different_count, 1000);
  same /= same_count, different /= different_count;
  std::printf("siamese: loss %.4f -> %.4f (mean of the last three displays); mean test-pair distance: same digit "
              "%.3f, different digits %.3f\n", first, last, same, different);
  EXPECT_LT(same, 0.5 * different) << "mean distance: same digit " << same << ", different digits " << different;
}

}  // namespace cortado::test
