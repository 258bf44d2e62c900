// loss_scale_gpu_test.cpp — dynamic and adaptive loss scaling on the GPU, decided on the device inside
// the captured step (step_stats.cu), against the CPU solver's (solver.cpp): the same steps skipped, the
// same scale at the end (in the solverstate), the same weights within float rounding.
#include <cmath>

#include "cortado/io.hpp"
#include "cortado/solver.hpp"
#include "gpu_compare.hpp"

namespace cortado::test {

namespace {

// The regression of loss_scale_test.cpp in fp16, scaled as `scaling` (the net's fields) says. Its loss
// weight overflows fp16 at dynamic scaling's first scales, and with a short growth interval steps are
// skipped and the scale also grows.
SolverParameter ScaledSolver(SolverParameter::SolverMode mode, const std::string& prefix, const std::string& scaling) {
  SolverParameter param;
  ReadProtoFromTextString("base_lr: 0.02 lr_policy: 'fixed' momentum: 0.9 weight_decay: 0.001 display: 0 "
                          "random_seed: 5 snapshot_after_train: false",
                          &param);
  param.set_solver_mode(mode);
  ReadProtoFromTextString("default_forward_type: FLOAT16 default_backward_type: FLOAT16 " + scaling + R"(
layer { name: "in" type: "Input" top: "x" top: "y" input_param { shape { dim: 8 dim: 4 } shape { dim: 8 dim: 2 } } }
layer { name: "ip" type: "InnerProduct" bottom: "x" top: "z"
        inner_product_param { num_output: 2 weight_filler { type: "gaussian" std: 0.1 } } }
layer { name: "loss" type: "EuclideanLoss" bottom: "z" bottom: "y" top: "loss" loss_weight: 40 }
)",
                          param.mutable_net_param());
  param.set_snapshot_prefix(prefix);
  return param;
}

struct ScaledRun {
  int skipped;
  float scale;
  std::vector<float> weights;
};

// 30 steps of the regression on `mode`'s device, then the solverstate's scale.
ScaledRun RunScaled(SolverParameter::SolverMode mode, const std::string& prefix, const std::string& scaling) {
  Solver solver(ScaledSolver(mode, prefix, scaling));
  FillLinearFit(solver.net());
  solver.Step(30);
  SolverState state;
  ReadProtoFromBinaryFile(solver.Snapshot(), &state);
  std::vector<float> weights;
  for (const Blob* p : solver.net()->learnable_params()) {
    const std::vector<float> values = p->ReadData();
    weights.insert(weights.end(), values.begin(), values.end());
  }
  return ScaledRun{solver.skipped_steps(), state.loss_scale(), weights};
}

}  // namespace

TEST(LossScaleGpu, DynamicScalingSkipsTheStepsTheCpuSkipsAndEndsAtItsScale) {
  SKIP_WITHOUT_GPU();
  const std::string dir = TempDir();
  const std::string dynamic = "global_grad_scale_dynamic: true global_grad_scale_growth_interval: 7";
  const ScaledRun cpu = RunScaled(SolverParameter::CPU, dir + "/cpu", dynamic);
  const ScaledRun gpu = RunScaled(SolverParameter::GPU, dir + "/gpu", dynamic);
  EXPECT_GE(cpu.skipped, 2);
  EXPECT_EQ(gpu.skipped, cpu.skipped);
  EXPECT_EQ(gpu.scale, cpu.scale);
  ExpectNear(gpu.weights, cpu.weights, 1e-3f, "weights after 30 steps");
}

// NVIDIA's adaptive rule (K · 4 / the largest gradient of each step) on the device: no step skipped,
// the CPU's scale at the end within float rounding (the largest |g| is the same element's), the same
// weights.
TEST(LossScaleGpu, AdaptiveScalingFollowsTheCpusScale) {
  SKIP_WITHOUT_GPU();
  const std::string dir = TempDir();
  const std::string adaptive = "global_grad_scale: 8 global_grad_scale_adaptive: true";
  const ScaledRun cpu = RunScaled(SolverParameter::CPU, dir + "/cpu_adaptive", adaptive);
  const ScaledRun gpu = RunScaled(SolverParameter::GPU, dir + "/gpu_adaptive", adaptive);
  EXPECT_EQ(cpu.skipped, 0);
  EXPECT_EQ(gpu.skipped, 0);
  EXPECT_NE(cpu.scale, 8.0f);  // the rule moved it
  EXPECT_NEAR(gpu.scale, cpu.scale, 1e-3f * cpu.scale);
  ExpectNear(gpu.weights, cpu.weights, 1e-3f, "weights after 30 steps");
}

}  // namespace cortado::test
