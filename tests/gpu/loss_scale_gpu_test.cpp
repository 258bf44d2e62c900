// loss_scale_gpu_test.cpp — dynamic loss scaling on the GPU, decided on the device inside the captured
// step (step_stats.cu), against the CPU solver's (solver.cpp): the same steps skipped, the same scale
// at the end (in the solverstate), the same weights within float rounding.
#include <cmath>

#include "cortado/io.hpp"
#include "cortado/solver.hpp"
#include "gpu_compare.hpp"

namespace cortado::test {

namespace {

// The regression of loss_scale_test.cpp in fp16 with a loss weight that overflows fp16 at the first
// scales, and a short growth interval, so that steps are skipped and the scale also grows.
SolverParameter DynamicSolver(SolverParameter::SolverMode mode, const std::string& prefix) {
  SolverParameter param;
  ReadProtoFromTextString("base_lr: 0.02 lr_policy: 'fixed' momentum: 0.9 weight_decay: 0.001 display: 0 "
                          "random_seed: 5 snapshot_after_train: false",
                          &param);
  param.set_solver_mode(mode);
  ReadProtoFromTextString(R"(
default_forward_type: FLOAT16 default_backward_type: FLOAT16
global_grad_scale_dynamic: true global_grad_scale_growth_interval: 7
layer { name: "in" type: "Input" top: "x" top: "y" input_param { shape { dim: 8 dim: 4 } shape { dim: 8 dim: 2 } } }
layer { name: "ip" type: "InnerProduct" bottom: "x" top: "z"
        inner_product_param { num_output: 2 weight_filler { type: "gaussian" std: 0.1 } } }
layer { name: "loss" type: "EuclideanLoss" bottom: "z" bottom: "y" top: "loss" loss_weight: 40 }
)",
                          param.mutable_net_param());
  param.set_snapshot_prefix(prefix);
  return param;
}

}  // namespace

TEST(LossScaleGpu, DynamicScalingSkipsTheStepsTheCpuSkipsAndEndsAtItsScale) {
  SKIP_WITHOUT_GPU();
  const std::string dir = TempDir();
  struct Run {
    int skipped;
    float scale;
    std::vector<float> weights;
  };
  auto run = [&](SolverParameter::SolverMode mode, const std::string& name) {
    Solver solver(DynamicSolver(mode, dir + "/" + name));
    FillLinearFit(solver.net());
    solver.Step(30);
    SolverState state;
    ReadProtoFromBinaryFile(solver.Snapshot(), &state);
    std::vector<float> weights;
    for (const Blob* p : solver.net()->learnable_params()) {
      const std::vector<float> values = p->ReadData();
      weights.insert(weights.end(), values.begin(), values.end());
    }
    return Run{solver.skipped_steps(), state.loss_scale(), weights};
  };
  const Run cpu = run(SolverParameter::CPU, "cpu");
  const Run gpu = run(SolverParameter::GPU, "gpu");
  EXPECT_GE(cpu.skipped, 2);
  EXPECT_EQ(gpu.skipped, cpu.skipped);
  EXPECT_EQ(gpu.scale, cpu.scale);
  ExpectNear(gpu.weights, cpu.weights, 1e-3f, "weights after 30 steps");
}

}  // namespace cortado::test
