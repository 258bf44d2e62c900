// recurrent_gpu_test.cpp — LSTMUnit, RNN and LSTM on the GPU against their CPU code: every top, bottom
// gradient and parameter gradient, with binary cont, a static input, exposed hidden states and sizes
// beyond one thread block; the state carried from one forward pass to the next; no device allocation
// in a step.
#include "gpu_compare.hpp"

namespace cortado::test {

namespace {

GpuCompareOptions BinaryCont(int cont_bottom) {
  GpuCompareOptions o;
  o.label_bottoms = {{cont_bottom, 2}};  // cont ∈ {0, 1}
  o.tolerance = 1e-4f;
  return o;
}

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

TEST(RecurrentGpu, LSTMUnitMatchesCpu) {
  SKIP_WITHOUT_GPU();
  ExpectGpuMatchesCpu("type: 'LSTMUnit'", {{1, 5, 7}, {1, 5, 28}, {1, 5}}, 2, BinaryCont(2));
  ExpectGpuMatchesCpu("type: 'LSTMUnit'", {{1, 37, 61}, {1, 37, 244}, {1, 37}}, 2, BinaryCont(2));
}

TEST(RecurrentGpu, RNNMatchesCpu) {
  SKIP_WITHOUT_GPU();
  ExpectGpuMatchesCpu(Recurrent("RNN", 4), {{3, 2, 3}, {3, 2}}, 1, BinaryCont(1));
  ExpectGpuMatchesCpu(Recurrent("RNN", 4), {{3, 2, 3}, {3, 2}, {2, 5}}, 1, BinaryCont(1));
  ExpectGpuMatchesCpu(Recurrent("RNN", 4, "expose_hidden: true"), {{3, 2, 3}, {3, 2}, {1, 2, 4}}, 2,
                      BinaryCont(1));
  ExpectGpuMatchesCpu(Recurrent("RNN", 4, "expose_hidden: true"), {{3, 2, 3}, {3, 2}, {2, 5}, {1, 2, 4}}, 2,
                      BinaryCont(1));
  ExpectGpuMatchesCpu(Recurrent("RNN", 33, "", "0.1"), {{12, 9, 13}, {12, 9}, {9, 6}}, 1, BinaryCont(1));
}

TEST(RecurrentGpu, LSTMMatchesCpu) {
  SKIP_WITHOUT_GPU();
  ExpectGpuMatchesCpu(Recurrent("LSTM", 4), {{3, 2, 3}, {3, 2}}, 1, BinaryCont(1));
  ExpectGpuMatchesCpu(Recurrent("LSTM", 4), {{3, 2, 3}, {3, 2}, {2, 5}}, 1, BinaryCont(1));
  ExpectGpuMatchesCpu(Recurrent("LSTM", 4, "expose_hidden: true"), {{3, 2, 3}, {3, 2}, {1, 2, 4}, {1, 2, 4}}, 3,
                      BinaryCont(1));
  ExpectGpuMatchesCpu(Recurrent("LSTM", 4, "expose_hidden: true"),
                      {{3, 2, 3}, {3, 2}, {2, 5}, {1, 2, 4}, {1, 2, 4}}, 3, BinaryCont(1));
  ExpectGpuMatchesCpu(Recurrent("LSTM", 33, "", "0.1"), {{12, 9, 13}, {12, 9}, {9, 6}}, 1, BinaryCont(1));
}

TEST(RecurrentGpu, CarriedStateMatchesCpu) {
  SKIP_WITHOUT_GPU();
  ExpectCarriedStateMatches(Recurrent("RNN", 5), {4, 3, 2});
  ExpectCarriedStateMatches(Recurrent("LSTM", 5), {4, 3, 2});
}

}  // namespace cortado::test
