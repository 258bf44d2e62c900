// loss_scale_test.cpp — loss scaling (NetParameter's global_grad_scale fields): a static scale that is
// a power of two changes no bit of training; dynamic scaling skips exactly the steps whose fp16
// gradients overflow, halving the scale each time, then trains on, and resumes exactly from a
// snapshot; adaptive scaling follows NVIDIA Caffe's rule.
#include <cmath>

#include "cortado/io.hpp"
#include "cortado/solver.hpp"
#include "test_util.hpp"

namespace cortado::test {

namespace {

// y = x·Wᵀ on fixed inputs (the Input layer keeps float whatever the net's precision).
std::string RegressionNet(const std::string& net_fields, float loss_weight) {
  return net_fields + R"(
layer { name: "in" type: "Input" top: "x" top: "y" input_param { shape { dim: 8 dim: 4 } shape { dim: 8 dim: 2 } } }
layer { name: "ip" type: "InnerProduct" bottom: "x" top: "z"
        inner_product_param { num_output: 2 weight_filler { type: "gaussian" std: 0.1 } } }
layer { name: "loss" type: "EuclideanLoss" bottom: "z" bottom: "y" top: "loss" loss_weight: )" +
         std::to_string(loss_weight) + " }\n";
}

SolverParameter MakeSolver(const std::string& net, const std::string& prefix) {
  SolverParameter param;
  ReadProtoFromTextString("base_lr: 0.02 lr_policy: 'fixed' momentum: 0.9 weight_decay: 0.001 max_iter: 200 "
                          "display: 0 random_seed: 5 solver_mode: CPU snapshot_after_train: false",
                          &param);
  ReadProtoFromTextString(net, param.mutable_net_param());
  param.set_snapshot_prefix(prefix);
  return param;
}

std::vector<float> Weights(Solver& solver) {
  return {solver.net()->param_data(), solver.net()->param_data() + solver.net()->param_count()};
}

}  // namespace

// Multiplying by 2^k and dividing by it again is exact in float: the same weights to the bit.
TEST(LossScale, StaticPowerOfTwoScaleTrainsTheSameBits) {
  const std::string dir = TempDir();
  Solver plain(MakeSolver(RegressionNet("", 1.0f), dir + "/plain"));
  Solver scaled(MakeSolver(RegressionNet("global_grad_scale: 1024", 1.0f), dir + "/scaled"));
  EXPECT_EQ(scaled.net()->loss_scale(), 1024.0f);
  FillLinearFit(plain.net());
  FillLinearFit(scaled.net());
  plain.Step(20);
  scaled.Step(20);
  EXPECT_EQ(Weights(scaled), Weights(plain));
}

// With loss weight 40 and fp16 gradients, the scale 65536 makes z's gradient overflow: each step that
// overflows is skipped (no weight, no history changes) and halves the scale, until a step fits.
TEST(LossScale, DynamicScalingSkipsExactlyTheOverflowingStepsThenTrains) {
  const std::string net = RegressionNet("default_forward_type: FLOAT16 default_backward_type: FLOAT16 "
                                        "global_grad_scale_dynamic: true global_grad_scale_growth_interval: 1000",
                                        40.0f);
  Solver solver(MakeSolver(net, TempDir() + "/dynamic"));
  ASSERT_EQ(solver.net()->blob_by_name("z")->diff_type(), DataType::kFloat16);
  EXPECT_EQ(solver.net()->loss_scale(), 65536.0f);
  FillLinearFit(solver.net());
  // The gradient of z at scale S is 40·S·(z − y)/8 (EuclideanLoss over 8 rows); fp16 holds it while
  // it rounds below 65520. Which steps must be skipped follows from the first forward pass.
  const float first_loss = solver.net()->Forward();
  const std::vector<float> z = solver.net()->blob_by_name("z")->ReadData();
  const std::vector<float> y = solver.net()->blob_by_name("y")->ReadData();
  double largest = 0;
  for (size_t i = 0; i < z.size(); ++i) largest = std::max(largest, std::fabs(double(z[i]) - y[i]));
  int expected_skips = 0;
  for (double scale = 65536; 40.0 * scale * largest / 8 >= 65520; scale /= 2) ++expected_skips;
  ASSERT_GE(expected_skips, 2) << "the test's loss weight no longer overflows fp16";
  std::printf("largest |z - y| %.4f: %d steps overflow\n", largest, expected_skips);
  const std::vector<float> initial = Weights(solver);
  solver.Step(expected_skips);
  EXPECT_EQ(solver.skipped_steps(), expected_skips);
  EXPECT_EQ(Weights(solver), initial);  // nothing moved
  EXPECT_EQ(solver.net()->loss_scale(), 65536.0f / std::ldexp(1.0f, expected_skips));
  EXPECT_EQ(solver.iter(), expected_skips);  // skipped steps still count as iterations, as PyTorch's
  solver.Step(1);
  EXPECT_EQ(solver.skipped_steps(), expected_skips);  // this one fitted
  EXPECT_NE(Weights(solver), initial);
  solver.Step(150);
  EXPECT_EQ(solver.skipped_steps(), expected_skips);
  const float last_loss = solver.net()->Forward();
  EXPECT_LT(last_loss, 0.02f * first_loss) << "first " << first_loss;
  for (float w : Weights(solver)) ASSERT_TRUE(std::isfinite(w));
}

// After growth_interval clean steps the scale doubles; a snapshot keeps the scale and the count of
// clean steps, so a resumed run ends with the weights of an uninterrupted one.
TEST(LossScale, DynamicScaleGrowsAndResumesExactly) {
  const std::string net = RegressionNet("default_forward_type: FLOAT16 default_backward_type: FLOAT16 "
                                        "global_grad_scale_dynamic: true global_grad_scale: 256 "
                                        "global_grad_scale_growth_interval: 3",
                                        1.0f);
  const std::string dir = TempDir();
  Solver straight(MakeSolver(net, dir + "/straight"));
  EXPECT_EQ(straight.net()->loss_scale(), 256.0f);  // the given scale is the first
  FillLinearFit(straight.net());
  straight.Step(7);
  EXPECT_EQ(straight.net()->loss_scale(), 1024.0f);  // doubled after steps 3 and 6
  straight.Step(5);

  Solver first(MakeSolver(net, dir + "/first"));
  FillLinearFit(first.net());
  first.Step(7);
  const std::string state = first.Snapshot();
  Solver resumed(MakeSolver(net, dir + "/second"));
  FillLinearFit(resumed.net());
  resumed.Restore(state);
  EXPECT_EQ(resumed.net()->loss_scale(), 1024.0f);
  resumed.Step(5);
  EXPECT_EQ(resumed.net()->loss_scale(), straight.net()->loss_scale());
  EXPECT_EQ(Weights(resumed), Weights(straight));
}

// NVIDIA Caffe's adaptive rule: the first step unscaled, each later one at K · 4 / (the largest
// unscaled gradient magnitude of the step before).
TEST(LossScale, AdaptiveScaleFollowsTheLargestGradient) {
  const std::string net = RegressionNet("global_grad_scale: 8 global_grad_scale_adaptive: true", 1.0f);
  Solver solver(MakeSolver(net, TempDir() + "/adaptive"));
  EXPECT_EQ(solver.net()->loss_scale(), 1.0f);
  FillLinearFit(solver.net());
  // The first step's gradient, from a pass of the same net before the step (iter_size 1: the solver's
  // step makes the same pass).
  solver.net()->ClearParamDiffs();
  solver.net()->Forward();
  solver.net()->Backward();
  float largest = 0;
  for (int64_t i = 0; i < solver.net()->param_count(); ++i)
    largest = std::max(largest, std::fabs(solver.net()->param_diff()[i]));
  solver.Step(1);
  EXPECT_FLOAT_EQ(solver.net()->loss_scale(), 8 * 4 / largest);
}

TEST(LossScale, ANonPositiveScaleIsAnError) {
  const std::string net = RegressionNet("global_grad_scale: -2", 1.0f);
  EXPECT_NE(ErrorOf([&] { Solver solver(MakeSolver(net, TempDir() + "/bad")); }).find("global_grad_scale must be a "
                                                                                     "positive number"),
            std::string::npos);
}

}  // namespace cortado::test
