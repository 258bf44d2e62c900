// batch_norm_test.cpp — BatchNorm: batch statistics over N (2-D) and over N and space (4-D) by hand,
// the running sums over two forwards, TEST-phase use of the global statistics (and a zero weight),
// use_global_stats overriding the phase, the backward pass by hand and by gradient checks (batch and
// global statistics), running in place, and the running statistics kept out of learning: lr_mult 0 is
// added when the prototxt gives none, another lr_mult is an error, and a solver with weight decay
// leaves them exactly at their running sums.
#include <cmath>

#include "cortado/error.hpp"
#include "cortado/io.hpp"
#include "cortado/layer_registry.hpp"
#include "cortado/memory.hpp"
#include "cortado/net.hpp"
#include "cortado/solver.hpp"
#include "test_util.hpp"

namespace cortado::test {

namespace {

void Set(Blob& blob, const std::vector<float>& values) {
  ASSERT_EQ(blob.count(), static_cast<int64_t>(values.size()));
  std::copy(values.begin(), values.end(), blob.data());
}

void ExpectValues(const Blob& blob, const std::vector<double>& expected, double tolerance, const char* what) {
  ASSERT_EQ(blob.count(), static_cast<int64_t>(expected.size())) << what;
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(blob.data()[i], expected[i], tolerance) << what << " " << i;
}

}  // namespace

TEST(BatchNorm, TrainNormalisesWithBatchStatisticsAndKeepsRunningSums) {
  LayerFixture f("type: 'BatchNorm'", {{2, 2}});
  ASSERT_EQ(f.layer().blobs().size(), 3u);
  EXPECT_EQ(f.layer().blobs()[0]->shape(), std::vector<int>{2});
  EXPECT_EQ(f.layer().blobs()[1]->shape(), std::vector<int>{2});
  EXPECT_EQ(f.layer().blobs()[2]->shape(), std::vector<int>{1});
  for (auto& b : f.layer().blobs()) ExpectValues(*b, std::vector<double>(b->count(), 0.0), 0, "initial");
  // Channel 0: {1, 3}, mean 2, variance 1; channel 1: {10, 30}, mean 20, variance 100.
  Set(f.bottom(0), {1, 10, 3, 30});
  f.Forward();
  const double eps = 1e-5, a = 1 / std::sqrt(1 + eps), b = 10 / std::sqrt(100 + eps);
  ExpectValues(f.top(0), {-a, -b, a, b}, 1e-6, "top");
  // The running sums: means, unbiased variances (m = 2: factor 2), weight 1.
  ExpectValues(*f.layer().blobs()[0], {2, 20}, 1e-5, "mean sum");
  ExpectValues(*f.layer().blobs()[1], {2, 200}, 1e-4, "variance sum");
  ExpectValues(*f.layer().blobs()[2], {1}, 0, "weight");
  // Second batch: channel 0 {0, 2} (mean 1, variance 1), channel 1 {0, 4} (mean 2, variance 4).
  Set(f.bottom(0), {0, 0, 2, 4});
  f.Forward();
  ExpectValues(*f.layer().blobs()[0], {2 * 0.999 + 1, 20 * 0.999 + 2}, 1e-5, "mean sum");
  ExpectValues(*f.layer().blobs()[1], {2 * 0.999 + 2, 200 * 0.999 + 8}, 1e-4, "variance sum");
  ExpectValues(*f.layer().blobs()[2], {1.999}, 1e-6, "weight");
}

TEST(BatchNorm, FourDStatisticsRunOverNumAndSpace) {
  LayerFixture f("type: 'BatchNorm' batch_norm_param { moving_average_fraction: 0.5 }", {{2, 2, 1, 2}});
  // (n, c, w): channel 0 holds {1, 2, 3, 6} (mean 3, variance 3.5), channel 1 {0, 0, 0, 8} (mean 2,
  // variance 12).
  Set(f.bottom(0), {1, 2, 0, 0, 3, 6, 0, 8});
  f.Forward();
  const double s0 = std::sqrt(3.5 + 1e-5), s1 = std::sqrt(12 + 1e-5);
  ExpectValues(f.top(0), {-2 / s0, -1 / s0, -2 / s1, -2 / s1, 0, 3 / s0, -2 / s1, 6 / s1}, 1e-6, "top");
  ExpectValues(*f.layer().blobs()[0], {3, 2}, 1e-6, "mean sum");
  ExpectValues(*f.layer().blobs()[1], {3.5 * 4 / 3, 12 * 4 / 3.0}, 1e-5, "variance sum (m = 4)");
  f.Forward();  // the same batch again, maf 0.5
  ExpectValues(*f.layer().blobs()[0], {4.5, 3}, 1e-6, "mean sum");
  ExpectValues(*f.layer().blobs()[2], {1.5}, 0, "weight");
}

TEST(BatchNorm, BackwardWithBatchStatisticsByHand) {
  // One channel {−3, −1, 1, 3}: mean 0, variance 5, s = sqrt(5 + eps); dy = (1, 0, 0, 0):
  // mean(dy) = 1/4, mean(dy·x̂) = −3/(4s), so dx_i = (dy_i − 1/4 + 3·x_i / (4s²)) / s.
  LayerFixture f("type: 'BatchNorm'", {{4, 1}});
  Set(f.bottom(0), {-3, -1, 1, 3});
  f.Forward();
  std::fill(f.top(0).diff(), f.top(0).diff() + 4, 0.0f);
  f.top(0).diff()[0] = 1;
  f.Backward();
  const double s2 = 5 + 1e-5;
  const double x[] = {-3, -1, 1, 3};
  for (int i = 0; i < 4; ++i)
    EXPECT_NEAR(f.bottom(0).diff()[i], ((i == 0) - 0.25 + 3 * x[i] / (4 * s2)) / std::sqrt(s2), 1e-6) << i;
}

TEST(BatchNorm, TestPhaseUsesGlobalStatistics) {
  LayerFixture f("type: 'BatchNorm' phase: TEST", {{2, 2}});
  // Sums (4, −2) and (8, 2) with weight 2: mean (2, −1), variance (4, 1).
  Set(*f.layer().blobs()[0], {4, -2});
  Set(*f.layer().blobs()[1], {8, 2});
  Set(*f.layer().blobs()[2], {2});
  Set(f.bottom(0), {2, 0, 4, -1});
  f.Forward();
  const double s0 = std::sqrt(4 + 1e-5), s1 = std::sqrt(1 + 1e-5);
  ExpectValues(f.top(0), {0, 1 / s1, 2 / s0, 0}, 1e-6, "top");
  ExpectValues(*f.layer().blobs()[0], {4, -2}, 0, "mean sum unchanged");
  ExpectValues(*f.layer().blobs()[1], {8, 2}, 0, "variance sum unchanged");
  ExpectValues(*f.layer().blobs()[2], {2}, 0, "weight unchanged");
  // dx = dy / sqrt(var + eps).
  const float dy[] = {1, 2, 3, 4};
  std::copy(dy, dy + 4, f.top(0).diff());
  f.Backward();
  ExpectValues(f.bottom(0), {2, 0, 4, -1}, 0, "bottom data untouched");
  const double dx[] = {1 / s0, 2 / s1, 3 / s0, 4 / s1};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(f.bottom(0).diff()[i], dx[i], 1e-6) << i;

  // A zero weight reads as zero statistics: y = x / sqrt(eps).
  LayerFixture zero("type: 'BatchNorm' phase: TEST batch_norm_param { eps: 0.25 }", {{1, 3}});
  Set(*zero.layer().blobs()[0], {5, 5, 5});
  Set(*zero.layer().blobs()[1], {5, 5, 5});
  Set(zero.bottom(0), {1, -2, 3});
  zero.Forward();
  ExpectValues(zero.top(0), {2, -4, 6}, 1e-6, "zero weight");
}

TEST(BatchNorm, UseGlobalStatsOverridesThePhase) {
  LayerFixture train_global("type: 'BatchNorm' batch_norm_param { use_global_stats: true }", {{2, 1}});
  Set(*train_global.layer().blobs()[0], {3});
  Set(*train_global.layer().blobs()[1], {12});
  Set(*train_global.layer().blobs()[2], {3});  // mean 1, variance 4
  Set(train_global.bottom(0), {1, 5});
  train_global.Forward();
  ExpectValues(train_global.top(0), {0, 4 / std::sqrt(4 + 1e-5)}, 1e-6, "global in TRAIN");
  ExpectValues(*train_global.layer().blobs()[2], {3}, 0, "weight unchanged");

  LayerFixture test_batch("type: 'BatchNorm' phase: TEST batch_norm_param { use_global_stats: false }", {{2, 1}});
  Set(test_batch.bottom(0), {1, 5});  // mean 3, variance 4
  test_batch.Forward();
  ExpectValues(test_batch.top(0), {-2 / std::sqrt(4 + 1e-5), 2 / std::sqrt(4 + 1e-5)}, 1e-6, "batch in TEST");
  ExpectValues(*test_batch.layer().blobs()[0], {3}, 1e-6, "mean sum updated");
  ExpectValues(*test_batch.layer().blobs()[2], {1}, 0, "weight updated");
}

TEST(BatchNorm, GradientCheck) {
  // Batch statistics: every output depends on every input of its channel. The running sums change on
  // each forward but do not enter the output, so central differences see only the batch.
  for (const std::vector<int>& shape : {std::vector<int>{5, 3}, std::vector<int>{2, 3, 2, 3}}) {
    LayerFixture f("type: 'BatchNorm' batch_norm_param { use_global_stats: false }", {shape});
    f.FillBottoms();
    GradientCheckOptions options;
    options.check_params = false;  // statistics, not parameters: no gradient
    CheckGradient(f, options);
  }
  // Global statistics: a fixed affine map per channel.
  LayerFixture f("type: 'BatchNorm' phase: TEST", {{2, 3, 2, 2}});
  Set(*f.layer().blobs()[0], {1, -2, 0.5f});
  Set(*f.layer().blobs()[1], {4, 0.5f, 2});
  Set(*f.layer().blobs()[2], {2});
  f.FillBottoms();
  GradientCheckOptions options;
  options.check_params = false;
  CheckGradient(f, options);
}

TEST(BatchNorm, RunsInPlace) {
  // The same batch through an out-of-place layer and an in-place one. Backward reads x̂ from the top
  // (BackwardReadsTopData), so a Net runs a later in-place writer of that top out of place
  // (net_memory_test.cpp checks the chain); here the top is left as Forward wrote it.
  LayerFixture out("type: 'BatchNorm'", {{3, 2, 2, 2}});
  out.FillBottoms();
  const std::vector<float> x = out.bottom(0).ReadData();
  out.Forward();
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  std::vector<float> dy(x.size());
  for (float& v : dy) v = normal(rng);
  out.top(0).WriteDiff(dy);
  out.Backward();

  Context ctx;
  Blob blob(std::vector<int>{3, 2, 2, 2});
  auto layer = LayerRegistry::Create(ParseLayer("name: 'bn' type: 'BatchNorm'"), ctx);
  layer->SetUp({&blob}, {&blob});
  std::vector<Blob*> blobs = {&blob};
  for (auto& p : layer->blobs()) blobs.push_back(p.get());
  for (const auto& s : layer->scratch_buffers()) blobs.push_back(s.blob);
  auto arena = AllocateBlobs(blobs, true);
  layer->InitParams();
  blob.WriteData(x);
  layer->Forward({&blob}, {&blob});
  for (int64_t i = 0; i < blob.count(); ++i) EXPECT_FLOAT_EQ(blob.data()[i], out.top(0).data()[i]) << i;
  for (int p = 0; p < 3; ++p)
    for (int64_t i = 0; i < layer->blobs()[p]->count(); ++i)
      EXPECT_FLOAT_EQ(layer->blobs()[p]->data()[i], out.layer().blobs()[p]->data()[i]) << p << " " << i;
  EXPECT_TRUE(layer->BackwardReadsTopData(0));
  EXPECT_FALSE(layer->BackwardReadsBottomData(0));
  blob.WriteDiff(dy);
  layer->Backward({&blob}, {true}, {&blob});
  for (int64_t i = 0; i < blob.count(); ++i) EXPECT_NEAR(blob.diff()[i], out.bottom(0).diff()[i], 1e-6) << i;
}

TEST(BatchNorm, StatisticsAreNotLearned) {
  // No param entries: the layer adds lr_mult 0 for each of its three blobs, as Caffe does.
  LayerFixture plain("type: 'BatchNorm'", {{2, 3}});
  ASSERT_EQ(plain.layer().layer_param().param_size(), 3);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(plain.layer().layer_param().param(i).lr_mult(), 0.0f);
  // One given (with lr_mult 0): the other two are added.
  LayerFixture one("type: 'BatchNorm' param { lr_mult: 0 decay_mult: 0 }", {{2, 3}});
  ASSERT_EQ(one.layer().layer_param().param_size(), 3);
  EXPECT_EQ(one.layer().layer_param().param(2).lr_mult(), 0.0f);
  // Any other lr_mult is refused.
  const std::string what =
      ErrorOf([] { LayerFixture("name: 'bn1' type: 'BatchNorm' param { lr_mult: 0 } param { lr_mult: 1 }", {{2, 3}}); });
  EXPECT_NE(what.find("bn1"), std::string::npos) << what;
  EXPECT_NE(what.find("lr_mult"), std::string::npos) << what;
  const std::string channels = ErrorOf([] {
    LayerFixture f("name: 'bn2' type: 'BatchNorm'", {{2, 3}});
    Blob other(std::vector<int>{2, 4});
    f.layer().Reshape({&other}, f.top());
  });
  EXPECT_NE(channels.find("3"), std::string::npos) << channels;
}

TEST(BatchNorm, SolverLeavesTheStatisticsAtTheirRunningSums) {
  // A prototxt without param entries, weight decay and momentum: after three steps on a fixed batch
  // the blobs hold exactly mean · (1 + maf + maf²) and 1 + maf + maf², untouched by the update.
  SolverParameter param;
  ReadProtoFromTextString("base_lr: 0.1 lr_policy: 'fixed' momentum: 0.9 weight_decay: 0.5 max_iter: 3 "
                          "display: 0 random_seed: 5 solver_mode: CPU snapshot_after_train: false",
                          &param);
  ReadProtoFromTextString(R"(
name: "bn_net"
layer { name: "in" type: "Input" top: "x" top: "y" input_param { shape { dim: 4 dim: 2 } shape { dim: 4 dim: 1 } } }
layer { name: "bn" type: "BatchNorm" bottom: "x" top: "xn" }
layer { name: "ip" type: "InnerProduct" bottom: "xn" top: "z" inner_product_param { num_output: 1 weight_filler { type: "gaussian" } } }
layer { name: "loss" type: "EuclideanLoss" bottom: "z" bottom: "y" top: "loss" }
)",
                          param.mutable_net_param());
  param.set_snapshot_prefix(TempDir() + "/bn");
  Solver solver(param);
  Net& net = *solver.net();
  ASSERT_GE(net.params_lr().size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(net.params_lr()[i], 0.0f) << i;
  EXPECT_FALSE(net.layer_by_name("bn")->param_propagate_down(0));
  Set(*net.blob_by_name("x"), {1, 2, 3, 4, 5, 6, 7, 8});  // column means 4 and 5
  Set(*net.blob_by_name("y"), {1, 0, -1, 0.5f});
  solver.Step(3);
  const double weight = 1 + 0.999 + 0.999 * 0.999;
  Layer& bn = *net.layer_by_name("bn");
  ExpectValues(*bn.blobs()[2], {weight}, 1e-6, "weight");
  ExpectValues(*bn.blobs()[0], {4 * weight, 5 * weight}, 1e-5, "mean sums");
  // Each column {1, 3, 5, 7} has unbiased variance 80/12.
  ExpectValues(*bn.blobs()[1], {80.0 / 12 * weight, 80.0 / 12 * weight}, 1e-4, "variance sums");
}

}  // namespace cortado::test
