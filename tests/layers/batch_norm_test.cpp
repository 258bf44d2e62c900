// batch_norm_test.cpp — BatchNorm: batch statistics over N (2-D) and over N and space (4-D) by hand,
// the running sums over two forwards, TEST-phase use of the global statistics (and a zero weight),
// use_global_stats overriding the phase, the backward pass by hand and by gradient checks (batch and
// global statistics), running in place, and the running statistics kept out of learning: lr_mult 0 is
// added when the prototxt gives none, another lr_mult is an error, and a solver with weight decay
// leaves them exactly at their running sums. NVIDIA Caffe's scale_bias: its five blobs in NVIDIA's order,
// fillers and ParamSpecs; the same results as BatchNorm then Scale (bias_term) in batch, TEST and
// use_global_stats modes; gradient checks of x, γ and β; in place; a net with it trains fused and layer by
// layer alike, and its weights file holds the five blobs.
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

// Each value of `actual` within `relative` of `expected`'s, relative to the largest magnitude (at least 1).
void ExpectClose(const std::vector<float>& actual, const std::vector<float>& expected, double relative,
                 const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  double scale = 1;
  for (float v : expected) scale = std::max(scale, static_cast<double>(std::fabs(v)));
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(actual[i], expected[i], relative * scale) << what << " " << i;
}

std::vector<float> Normal(size_t n, std::mt19937& rng, float mean, float std) {
  std::normal_distribution<float> normal(mean, std);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

// A BatchNorm with scale_bias against BatchNorm then Scale (bias_term) holding the same γ and β, on random
// data: the top, the running sums, and after Backward dx, dγ and dβ. `layer` goes into both BatchNorms'
// text (a phase), `bn` into their batch_norm_param; with `stats`, both start from the same running sums.
void ExpectScaleBiasIsBatchNormThenScale(const std::string& layer, const std::string& bn, const std::vector<int>& shape,
                                         bool stats) {
  SCOPED_TRACE(layer + " " + bn);
  const size_t channels = static_cast<size_t>(shape[1]);
  LayerFixture own("type: 'BatchNorm' " + layer + " batch_norm_param { scale_bias: true " + bn + " }", {shape});
  LayerFixture plain("type: 'BatchNorm' " + layer + " batch_norm_param { " + bn + " }", {shape});
  LayerFixture scale("type: 'Scale' scale_param { bias_term: true }", {shape});
  ASSERT_EQ(own.layer().blobs().size(), 5u);
  std::mt19937 rng(19);
  const std::vector<float> gamma = Normal(channels, rng, 1, 0.5f), beta = Normal(channels, rng, 0, 1);
  own.layer().blobs()[3]->WriteData(gamma);
  own.layer().blobs()[4]->WriteData(beta);
  scale.layer().blobs()[0]->WriteData(gamma);
  scale.layer().blobs()[1]->WriteData(beta);
  if (stats) {
    std::vector<float> variance = Normal(channels, rng, 2, 0.3f);
    for (float& v : variance) v = std::fabs(v);
    const std::vector<std::vector<float>> sums = {Normal(channels, rng, 0, 2), variance, {2}};
    for (int b = 0; b < 3; ++b) {
      own.layer().blobs()[b]->WriteData(sums[b]);
      plain.layer().blobs()[b]->WriteData(sums[b]);
    }
  }
  const std::vector<float> x = Normal(static_cast<size_t>(own.bottom(0).count()), rng, 3, 2);
  own.bottom(0).WriteData(x);
  plain.bottom(0).WriteData(x);
  own.Forward();
  plain.Forward();
  scale.bottom(0).WriteData(plain.top(0).ReadData());
  scale.Forward();
  ExpectClose(own.top(0).ReadData(), scale.top(0).ReadData(), 1e-5, "top");
  for (int b = 0; b < 3; ++b)
    ExpectClose(own.layer().blobs()[b]->ReadData(), plain.layer().blobs()[b]->ReadData(), 1e-5,
                "statistics blob " + std::to_string(b));
  const std::vector<float> dy = Normal(x.size(), rng, 0, 1);
  own.top(0).WriteDiff(dy);
  own.Backward();
  scale.top(0).WriteDiff(dy);
  scale.Backward();
  plain.top(0).WriteDiff(scale.bottom(0).ReadDiff());
  plain.Backward();
  ExpectClose(own.bottom(0).ReadDiff(), plain.bottom(0).ReadDiff(), 1e-4, "dx");
  ExpectClose(own.layer().blobs()[3]->ReadDiff(), scale.layer().blobs()[0]->ReadDiff(), 1e-4, "dγ");
  ExpectClose(own.layer().blobs()[4]->ReadDiff(), scale.layer().blobs()[1]->ReadDiff(), 1e-4, "dβ");
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

namespace {

// The gradient of x through a BatchNorm on stored statistics (mean sums, variance sums, weight 2 over
// 3 channels): a fixed affine map per channel; the statistics blobs have none.
void CheckGlobalStatisticsGradient(const std::string& layer_text) {
  LayerFixture f(layer_text, {{2, 3, 2, 2}});
  Set(*f.layer().blobs()[0], {1, -2, 0.5f});
  Set(*f.layer().blobs()[1], {4, 0.5f, 2});
  Set(*f.layer().blobs()[2], {2});
  f.FillBottoms();
  GradientCheckOptions options;
  options.check_params = false;
  CheckGradient(f, options);
}

}  // namespace

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
  CheckGlobalStatisticsGradient("type: 'BatchNorm' phase: TEST");
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

TEST(BatchNorm, ScaleBiasAddsScaleAndBiasBlobsInNvidiasOrder) {
  // NVIDIA Caffe's order: the running mean and variance sums, their weight, then γ (C) and β (C);
  // γ starts at 1 and β at 0.
  LayerFixture f("type: 'BatchNorm' batch_norm_param { scale_bias: true }", {{2, 3, 2, 2}});
  ASSERT_EQ(f.layer().blobs().size(), 5u);
  const std::vector<std::vector<int>> shapes = {{3}, {3}, {1}, {3}, {3}};
  for (int b = 0; b < 5; ++b) EXPECT_EQ(f.layer().blobs()[b]->shape(), shapes[b]) << b;
  ExpectValues(*f.layer().blobs()[0], {0, 0, 0}, 0, "mean sum");
  ExpectValues(*f.layer().blobs()[2], {0}, 0, "weight");
  ExpectValues(*f.layer().blobs()[3], {1, 1, 1}, 0, "γ");
  ExpectValues(*f.layer().blobs()[4], {0, 0, 0}, 0, "β");
  EXPECT_FALSE(f.layer().BackwardReadsTopData(0));  // x̂ is kept apart from y
  EXPECT_FALSE(f.layer().BackwardReadsBottomData(0));
  // The statistics get lr_mult 0; γ and β lr_mult 1, decay_mult 1.
  const LayerParameter& lp = f.layer().layer_param();
  ASSERT_EQ(lp.param_size(), 5);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(lp.param(i).lr_mult(), 0.0f) << i;
  for (int i = 3; i < 5; ++i) {
    EXPECT_EQ(lp.param(i).lr_mult(), 1.0f) << i;
    EXPECT_EQ(lp.param(i).decay_mult(), 1.0f) << i;
  }
  // A filler implies scale_bias, as in NVIDIA Caffe; the prototxt's param entry for γ is kept.
  LayerFixture filled("type: 'BatchNorm' param { lr_mult: 0 } param { lr_mult: 0 } param { lr_mult: 0 } "
                      "param { lr_mult: 2 decay_mult: 0 } batch_norm_param { "
                      "scale_filler { type: 'constant' value: 0.5 } bias_filler { type: 'constant' value: -1 } }",
                      {{4, 2}});
  ASSERT_EQ(filled.layer().blobs().size(), 5u);
  ExpectValues(*filled.layer().blobs()[3], {0.5, 0.5}, 0, "γ filled");
  ExpectValues(*filled.layer().blobs()[4], {-1, -1}, 0, "β filled");
  ASSERT_EQ(filled.layer().layer_param().param_size(), 5);
  EXPECT_EQ(filled.layer().layer_param().param(3).lr_mult(), 2.0f);
  EXPECT_EQ(filled.layer().layer_param().param(3).decay_mult(), 0.0f);
  EXPECT_EQ(filled.layer().layer_param().param(4).lr_mult(), 1.0f);
  LayerFixture bias_only("type: 'BatchNorm' batch_norm_param { bias_filler { type: 'constant' value: 3 } }", {{4, 2}});
  ASSERT_EQ(bias_only.layer().blobs().size(), 5u);
  ExpectValues(*bias_only.layer().blobs()[3], {1, 1}, 0, "γ default");
  ExpectValues(*bias_only.layer().blobs()[4], {3, 3}, 0, "β filled");
  // Without it: three blobs.
  LayerFixture plain("type: 'BatchNorm' batch_norm_param { scale_bias: false }", {{2, 3}});
  EXPECT_EQ(plain.layer().blobs().size(), 3u);
  EXPECT_EQ(plain.layer().layer_param().param_size(), 3);
}

TEST(BatchNorm, ScaleBiasIsBatchNormThenScale) {
  for (const std::vector<int>& shape : {std::vector<int>{6, 3}, std::vector<int>{2, 3, 4, 5}}) {
    ExpectScaleBiasIsBatchNormThenScale("", "", shape, false);  // batch statistics, running sums updated
    ExpectScaleBiasIsBatchNormThenScale("", "moving_average_fraction: 0.9 eps: 0.0001", shape, true);
    ExpectScaleBiasIsBatchNormThenScale("phase: TEST", "", shape, true);  // global statistics
    ExpectScaleBiasIsBatchNormThenScale("", "use_global_stats: true", shape, true);
    ExpectScaleBiasIsBatchNormThenScale("phase: TEST", "use_global_stats: false", shape, false);
  }
}

TEST(BatchNorm, ScaleBiasGradientCheck) {
  // Batch statistics: x, γ and β (the statistics blobs do not enter the output: both gradients 0).
  const std::string text = "type: 'BatchNorm' batch_norm_param { scale_bias: true "
                           "scale_filler { type: 'gaussian' mean: 1 std: 0.5 } bias_filler { type: 'gaussian' } }";
  for (const std::vector<int>& shape : {std::vector<int>{5, 3}, std::vector<int>{2, 3, 2, 3}}) {
    LayerFixture f(text, {shape});
    f.FillBottoms();
    CheckGradient(f);
  }
  // Global statistics: x (γ's and β's gradients there: ScaleBiasIsBatchNormThenScale).
  CheckGlobalStatisticsGradient("phase: TEST " + text);
}

TEST(BatchNorm, ScaleBiasRunsInPlace) {
  // In place, with the top overwritten between Forward and Backward (as an in-place ReLU's backward
  // leaves it): x̂ is the layer's own, so the results are the out-of-place layer's.
  const std::string text = "name: 'bn' type: 'BatchNorm' batch_norm_param { scale_bias: true "
                           "scale_filler { type: 'gaussian' mean: 1 std: 0.5 } bias_filler { type: 'gaussian' } }";
  LayerFixture out(text, {{3, 2, 2, 2}});
  out.FillBottoms();
  const std::vector<float> x = out.bottom(0).ReadData();
  out.Forward();
  std::mt19937 rng(3);
  const std::vector<float> dy = Normal(x.size(), rng, 0, 1);
  out.top(0).WriteDiff(dy);
  out.Backward();

  Context ctx;
  Blob blob(std::vector<int>{3, 2, 2, 2});
  auto layer = LayerRegistry::Create(ParseLayer(text), ctx);
  layer->SetUp({&blob}, {&blob});
  std::vector<Blob*> blobs = {&blob};
  for (auto& p : layer->blobs()) blobs.push_back(p.get());
  for (const auto& s : layer->scratch_buffers()) blobs.push_back(s.blob);
  auto arena = AllocateBlobs(blobs, true);
  layer->InitParams();
  for (int p = 3; p < 5; ++p) {
    layer->blobs()[p]->WriteData(out.layer().blobs()[p]->ReadData());
    layer->blobs()[p]->WriteDiff(std::vector<float>(2, 0.0f));
  }
  blob.WriteData(x);
  layer->Forward({&blob}, {&blob});
  ExpectClose(blob.ReadData(), out.top(0).ReadData(), 1e-6, "top");
  blob.WriteData(std::vector<float>(x.size(), 7.0f));
  blob.WriteDiff(dy);
  layer->Backward({&blob}, {true}, {&blob});
  ExpectClose(blob.ReadDiff(), out.bottom(0).ReadDiff(), 1e-6, "dx");
  for (int p = 3; p < 5; ++p)
    ExpectClose(layer->blobs()[p]->ReadDiff(), out.layer().blobs()[p]->ReadDiff(), 1e-6, "blob diff " + std::to_string(p));
}

namespace {

struct ScaleBiasRun {
  float first_loss = 0, last_loss = 0;
  bool fused = false;
  std::vector<std::vector<float>> params;
  NetParameter weights;
};

// NVIDIA's ResNet form (BatchNorm with scale_bias out of place, ReLU in place on its top) under an
// InnerProduct and a Euclidean loss, trained `steps` SGD steps on one batch.
ScaleBiasRun TrainScaleBiasNet(bool fuse, int steps) {
  SolverParameter param;
  ReadProtoFromTextString("base_lr: 0.05 lr_policy: 'fixed' momentum: 0.9 weight_decay: 0.0005 display: 0 "
                          "random_seed: 5 solver_mode: CPU snapshot_after_train: false",
                          &param);
  param.set_max_iter(steps);
  ReadProtoFromTextString(R"(
name: "scale_bias_net"
layer { name: "in" type: "Input" top: "x" top: "y" input_param { shape { dim: 8 dim: 3 dim: 2 dim: 2 } shape { dim: 8 dim: 1 } } }
layer { name: "bn" type: "BatchNorm" bottom: "x" top: "xn"
        batch_norm_param { scale_bias: true moving_average_fraction: 0.9 eps: 0.0001 } }
layer { name: "relu" type: "ReLU" bottom: "xn" top: "xn" }
layer { name: "ip" type: "InnerProduct" bottom: "xn" top: "z"
        inner_product_param { num_output: 1 weight_filler { type: "gaussian" std: 0.3 } } }
layer { name: "loss" type: "EuclideanLoss" bottom: "z" bottom: "y" top: "loss" }
)",
                          param.mutable_net_param());
  param.set_fuse(fuse);
  param.set_snapshot_prefix(TempDir() + "/scale_bias");
  Solver solver(param);
  Net& net = *solver.net();
  std::mt19937 rng(8);
  net.blob_by_name("x")->WriteData(Normal(96, rng, 1, 2));
  net.blob_by_name("y")->WriteData(Normal(8, rng, 0, 1));
  ScaleBiasRun run;
  run.fused = net.fused_layer_at(1) != nullptr;
  EXPECT_EQ(net.params_lr().size(), 7u);  // bn's five blobs, ip's two
  const std::vector<float> lr = {0, 0, 0, 1, 1, 1, 1};
  for (size_t i = 0; i < lr.size() && i < net.params_lr().size(); ++i) EXPECT_EQ(net.params_lr()[i], lr[i]) << i;
  run.first_loss = net.Forward();
  solver.Step(steps);
  run.last_loss = net.Forward();
  for (const Blob* p : net.params()) run.params.push_back(p->ReadData());
  net.ToProto(&run.weights);
  return run;
}

}  // namespace

TEST(BatchNorm, ScaleBiasNetTrainsFusedAndLayerByLayerAlike) {
  const ScaleBiasRun fused = TrainScaleBiasNet(true, 20);
  const ScaleBiasRun layers = TrainScaleBiasNet(false, 20);
  EXPECT_TRUE(fused.fused);  // bn + relu as one chain
  EXPECT_FALSE(layers.fused);
  EXPECT_LT(fused.last_loss, 0.5f * fused.first_loss);
  EXPECT_NEAR(fused.last_loss, layers.last_loss, 1e-4 * std::max(1.0f, layers.first_loss));
  ASSERT_EQ(fused.params.size(), layers.params.size());
  for (size_t p = 0; p < fused.params.size(); ++p) ExpectClose(fused.params[p], layers.params[p], 1e-4, "param " + std::to_string(p));
  // γ and β learned; the weights file holds bn's five blobs in NVIDIA's order and shapes.
  EXPECT_NE(fused.params[3], std::vector<float>(3, 1.0f));
  EXPECT_NE(fused.params[4], std::vector<float>(3, 0.0f));
  const LayerParameter* bn = nullptr;
  for (const LayerParameter& layer : fused.weights.layer())
    if (layer.name() == "bn") bn = &layer;
  ASSERT_NE(bn, nullptr);
  ASSERT_EQ(bn->blobs_size(), 5);
  const std::vector<int> dims = {3, 3, 1, 3, 3};
  for (int b = 0; b < 5; ++b) {
    ASSERT_EQ(bn->blobs(b).shape().dim_size(), 1) << b;
    EXPECT_EQ(bn->blobs(b).shape().dim(0), dims[b]) << b;
    ASSERT_EQ(bn->blobs(b).data_size(), dims[b]) << b;
    for (int i = 0; i < dims[b]; ++i) EXPECT_EQ(bn->blobs(b).data(i), fused.params[b][i]) << b << " " << i;
  }
}

}  // namespace cortado::test
