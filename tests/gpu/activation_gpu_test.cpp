// activation_gpu_test.cpp — AbsVal, BNLL, Power, Exp, Log, Threshold, Clip, ELU, Swish and PReLU on
// the GPU beyond the plain CPU-against-GPU comparisons (those, over several parameter settings and
// sizes, are rows of layer_table_gpu_test.cpp): in place on the GPU against out of place on the CPU;
// PReLU's slope gradient accumulating, without device allocation, and bit for bit the same over two
// runs with several chunks per channel; Threshold's backward error.
#include <cstring>

#include "cortado/error.hpp"
#include "cortado/gpu.hpp"
#include "cortado/layer_registry.hpp"
#include "gpu_compare.hpp"
#include "layers/in_place.hpp"

namespace cortado::test {

namespace {

const char* const kTypes[] = {"AbsVal", "BNLL", "Power", "Exp", "Log", "Threshold", "Clip", "ELU", "Swish", "PReLU"};

// The layer in place on the GPU against the layer out of place on the CPU, for inputs uniform in
// [lo, hi): top, bottom diff and parameter diffs.
void ExpectGpuInPlaceMatchesCpu(const std::string& text, const std::vector<int>& shape, float lo, float hi) {
  SCOPED_TRACE(text);
  size_t n = 1;
  for (int d : shape) n *= static_cast<size_t>(d);
  const std::vector<float> x = UniformValues(n, lo, hi, 21), dy = UniformValues(n, -1.0f, 1.0f, 22);
  const NeuronRun cpu = RunNeuron(text, shape, x, dy, false, Device::kCPU);
  const NeuronRun gpu = RunNeuron(text, shape, x, dy, true, Device::kGPU);
  ExpectNear(gpu.y, cpu.y, 1e-4f, "in-place top");
  ExpectNear(gpu.dx, cpu.dx, 1e-4f, "in-place bottom diff");
  ASSERT_EQ(gpu.param_diffs.size(), cpu.param_diffs.size());
  for (size_t p = 0; p < cpu.param_diffs.size(); ++p)
    ExpectNear(gpu.param_diffs[p], cpu.param_diffs[p], 1e-4f, "in-place parameter diff " + std::to_string(p));
}

}  // namespace

TEST(ActivationGpu, InPlaceMatchesCpu) {
  SKIP_WITHOUT_GPU();
  ExpectGpuInPlaceMatchesCpu("type: 'BNLL'", {4, 5, 6}, -4, 4);
  ExpectGpuInPlaceMatchesCpu("type: 'Power' power_param { power: 2 scale: 0.5 shift: 1 }", {4, 5, 6}, -2, 2);
  ExpectGpuInPlaceMatchesCpu("type: 'Power' power_param { scale: 3 shift: -1 }", {4, 5, 6}, -2, 2);
  ExpectGpuInPlaceMatchesCpu("type: 'Exp' exp_param { base: 3 scale: 0.5 }", {4, 5, 6}, -2, 2);
  ExpectGpuInPlaceMatchesCpu("type: 'Log' log_param { base: 2 shift: 3 }", {4, 5, 6}, -2, 2);
  ExpectGpuInPlaceMatchesCpu("type: 'Clip' clip_param { min: -0.5 max: 1 }", {4, 5, 6}, -2, 2);
  ExpectGpuInPlaceMatchesCpu("type: 'ELU' elu_param { alpha: 0.7 }", {4, 5, 6}, -3, 3);
  ExpectGpuInPlaceMatchesCpu("type: 'Swish' swish_param { beta: 1.5 }", {4, 5, 6}, -4, 4);
  ExpectGpuInPlaceMatchesCpu("type: 'PReLU' prelu_param { filler { type: 'gaussian' } }", {4, 5, 6}, -2, 2);
  ExpectGpuInPlaceMatchesCpu("type: 'PReLU' prelu_param { channel_shared: true filler { type: 'gaussian' } }",
                             {4, 5, 6}, -2, 2);
}

// Backward adds to the slope diff (the Net zeroes it once per iteration), and a step allocates
// nothing on the device, shared slope (with its scratch of partial sums) included.
TEST(ActivationGpu, PReLUSlopeGradientAccumulatesWithoutAllocation) {
  SKIP_WITHOUT_GPU();
  for (const char* text : {"type: 'PReLU'", "type: 'PReLU' prelu_param { channel_shared: true }"}) {
    SCOPED_TRACE(text);
    LayerFixture cpu(text, {{3, 4, 5}}, 1, 1701, Device::kCPU);
    LayerFixture gpu(text, {{3, 4, 5}}, 1, 1701, Device::kGPU);
    const std::vector<float> x = UniformValues(60, -2.0f, 2.0f, 31), dy = UniformValues(60, -1.0f, 1.0f, 32);
    for (LayerFixture* f : {&cpu, &gpu}) {
      f->bottom(0).WriteData(x);
      f->top(0).WriteDiff(dy);
    }
    cpu.Forward();
    cpu.Backward();
    const std::vector<float> once = cpu.layer().blobs()[0]->ReadDiff();
    Blob& slope = *gpu.layer().blobs()[0];
    slope.WriteDiff(std::vector<float>(static_cast<size_t>(slope.count()), 1.0f));
    const int64_t allocations = GpuAllocationCount();
    gpu.Forward();
    gpu.layer().Backward(gpu.top(), {true}, gpu.bottom());
    gpu.layer().Backward(gpu.top(), {true}, gpu.bottom());
    gpu.ctx().Synchronize();
    EXPECT_EQ(GpuAllocationCount(), allocations);
    std::vector<float> expected = once;
    for (float& v : expected) v = 1.0f + 2.0f * v;
    ExpectNear(slope.ReadDiff(), expected, 1e-4f, "slope diff after two backwards onto ones");
    ExpectNear(gpu.bottom(0).ReadDiff(), cpu.bottom(0).ReadDiff(), 1e-5f, "bottom diff");
  }
}

// Shapes whose channels split into several chunks of the GPU's channel sums (kernels/channel_sums.hpp):
// chunk boundaries inside an image, a thread's stride across images, D = 1, the grid's full target
// (a shared slope sums the whole bottom as one channel: 27, 18, 15 and 1024 chunks).
const std::vector<std::vector<int>> kChunkedShapes = {{8, 3, 67, 67}, {300, 5, 7, 7}, {20000, 3}, {40, 5, 150, 150}};
const char* const kPReLUs[] = {"type: 'PReLU' prelu_param { filler { type: 'gaussian' } }",
                               "type: 'PReLU' prelu_param { channel_shared: true filler { type: 'gaussian' } }"};

// Forward and Backward twice on one GPU layer with the same x and dy: top, bottom diff and slope diff
// are the same bits both times (fixed summation order, no atomics).
TEST(ActivationGpu, PReLUSlopeGradientIsRepeatableBitForBit) {
  SKIP_WITHOUT_GPU();
  for (const char* text : kPReLUs) {
    for (const std::vector<int>& shape : {kChunkedShapes[0], kChunkedShapes[3]}) {
      SCOPED_TRACE(std::string(text) + " over " + testing::PrintToString(shape));
      LayerFixture f(text, {shape}, 1, 1701, Device::kGPU);
      const size_t n = static_cast<size_t>(f.bottom(0).count());
      f.bottom(0).WriteData(UniformValues(n, -2.0f, 2.0f, 41));
      f.top(0).WriteDiff(UniformValues(n, -1.0f, 1.0f, 42));
      std::vector<std::vector<float>> first;
      for (int run = 0; run < 2; ++run) {
        f.Forward();
        f.Backward();
        f.ctx().Synchronize();
        const std::vector<std::vector<float>> out = {f.top(0).ReadData(), f.bottom(0).ReadDiff(),
                                                     f.layer().blobs()[0]->ReadDiff()};
        if (run == 0) {
          first = out;
          continue;
        }
        for (size_t k = 0; k < out.size(); ++k) {
          ASSERT_EQ(out[k].size(), first[k].size());
          EXPECT_EQ(std::memcmp(out[k].data(), first[k].data(), out[k].size() * sizeof(float)), 0)
              << "result " << k << " (top, bottom diff, slope diff) differs between two runs";
        }
      }
    }
  }
}

TEST(ActivationGpu, ThresholdBackwardIsAnError) {
  SKIP_WITHOUT_GPU();
  LayerFixture f("name: 'step' type: 'Threshold'", {{2, 3}}, 1, 1701, Device::kGPU);
  f.Forward();
  EXPECT_NO_THROW(f.layer().Backward(f.top(), {false}, f.bottom()));
  const std::string message = ErrorOf([&] { f.Backward(); });
  EXPECT_NE(message.find("layer step (Threshold)"), std::string::npos) << message;
}

}  // namespace cortado::test
