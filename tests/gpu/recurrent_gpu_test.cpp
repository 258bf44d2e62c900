// recurrent_gpu_test.cpp — RNN and LSTM on the GPU against their CPU code over several forward
// passes: the state carried from one pass to the next, and no device allocation in a step. The plain
// CPU-against-GPU comparisons of LSTMUnit, RNN and LSTM (every top, bottom gradient and parameter
// gradient, with binary cont, a static input, exposed hidden states and sizes beyond one thread
// block) are rows of layer_table_gpu_test.cpp.
#include "gpu_compare.hpp"

namespace cortado::test {

namespace {

// std: the fillers' deviation (small for long sequences, so rounding differences are not amplified).
std::string Recurrent(const std::string& type, int num_output, const std::string& extra = "",
                      const std::string& std = "0.3") {
  return "name: 'r' type: '" + type + "' recurrent_param { num_output: " + std::to_string(num_output) +
         " weight_filler { type: 'gaussian' std: " + std + " } bias_filler { type: 'gaussian' std: " + std +
         " } " + extra + " }";
}

std::vector<float> Random(int64_t n, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = normal(rng);
  return v;
}

// Three forward and backward passes on both devices with the same inputs: the state carried from one
// pass to the next (cont_1 = 1 after the first) must agree, and a step must not allocate on the device.
void ExpectCarriedStateMatches(const std::string& layer, const std::vector<int>& x_shape) {
  const int t_steps = x_shape[0], n = x_shape[1];
  LayerFixture cpu(layer, {x_shape, {t_steps, n}}, 1, 7, Device::kCPU);
  LayerFixture gpu(layer, {x_shape, {t_steps, n}}, 1, 7, Device::kGPU);
  for (size_t p = 0; p < cpu.layer().blobs().size(); ++p)
    gpu.layer().blobs()[p]->WriteData(cpu.layer().blobs()[p]->ReadData());
  std::mt19937 rng(5);
  for (int pass = 0; pass < 3; ++pass) {
    const std::vector<float> x = Random(cpu.bottom(0).count(), rng);
    std::vector<float> cont(static_cast<size_t>(t_steps * n), 1.0f);
    if (pass == 0) std::fill(cont.begin(), cont.begin() + n, 0.0f);
    if (pass == 2) cont[static_cast<size_t>(n + 1)] = 0.0f;  // one stream restarts at t = 1
    const std::vector<float> dy = Random(cpu.top(0).count(), rng);
    for (LayerFixture* f : {&cpu, &gpu}) {
      f->bottom(0).WriteData(x);
      f->bottom(1).WriteData(cont);
    }
    const int64_t allocations = GpuAllocationCount();
    cpu.Forward();
    gpu.Forward();
    cpu.top(0).WriteDiff(dy);
    gpu.top(0).WriteDiff(dy);
    cpu.Backward();
    gpu.Backward();
    EXPECT_EQ(GpuAllocationCount(), allocations) << "a step allocated device memory";
    const std::string what = "pass " + std::to_string(pass) + " ";
    ExpectNear(gpu.top(0).ReadData(), cpu.top(0).ReadData(), 1e-4f, what + "top");
    ExpectNear(gpu.bottom(0).ReadDiff(), cpu.bottom(0).ReadDiff(), 1e-4f, what + "x diff");
    for (size_t p = 0; p < cpu.layer().blobs().size(); ++p)
      ExpectNear(gpu.layer().blobs()[p]->ReadDiff(), cpu.layer().blobs()[p]->ReadDiff(), 1e-4f,
                 what + "parameter diff " + std::to_string(p));
  }
}

}  // namespace

TEST(RecurrentGpu, CarriedStateMatchesCpu) {
  SKIP_WITHOUT_GPU();
  ExpectCarriedStateMatches(Recurrent("RNN", 5), {4, 3, 2});
  ExpectCarriedStateMatches(Recurrent("LSTM", 5), {4, 3, 2});
}

}  // namespace cortado::test
