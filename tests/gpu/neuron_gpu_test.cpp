// neuron_gpu_test.cpp — the element-wise layers on the GPU beyond the plain CPU-against-GPU
// comparisons of ReLU, Sigmoid, TanH, Dropout in TEST and EuclideanLoss (rows of
// layer_table_gpu_test.cpp): in place against the CPU (ReLU plain and leaky, Sigmoid, TanH, Dropout in
// TEST), Dropout's TEST phase without a mask buffer and its TRAIN phase (the mask's values, kept
// fraction, reuse by Backward, in place, seeding), EuclideanLoss's hand-computed loss and gradients.
#include <cmath>
#include <random>

#include "cortado/gpu.hpp"
#include "cortado/layer_registry.hpp"
#include "cortado/memory.hpp"
#include "gpu_compare.hpp"

namespace cortado::test {

namespace {

std::vector<float> Gaussian(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

// One layer whose top is its bottom (in place), on one device: Forward then Backward on given values.
struct InPlaceRun {
  std::vector<float> y, dx;
};
InPlaceRun RunInPlace(const std::string& text, const std::vector<int>& shape, Device device,
                      const std::vector<float>& x, const std::vector<float>& dy) {
  Context ctx(device, 7);
  Blob blob(shape);
  std::unique_ptr<Layer> layer = LayerRegistry::Create(ParseLayer(text), ctx);
  layer->SetUp({&blob}, {&blob});
  std::vector<Blob*> blobs = {&blob};
  for (const auto& s : layer->scratch_buffers()) blobs.push_back(s.blob);
  std::unique_ptr<Arena> arena = AllocateBlobs(blobs, true, device);
  blob.WriteData(x);
  layer->Forward({&blob}, {&blob});
  ctx.Synchronize();
  InPlaceRun run;
  run.y = blob.ReadData();
  blob.WriteDiff(dy);
  layer->Backward({&blob}, {true}, {&blob});
  ctx.Synchronize();
  run.dx = blob.ReadDiff();
  return run;
}

void ExpectInPlaceMatchesCpu(const std::string& text, const std::vector<int>& shape) {
  int64_t n = 1;
  for (int d : shape) n *= d;
  const std::vector<float> x = Gaussian(static_cast<size_t>(n), 11), dy = Gaussian(static_cast<size_t>(n), 12);
  const InPlaceRun cpu = RunInPlace(text, shape, Device::kCPU, x, dy);
  const InPlaceRun gpu = RunInPlace(text, shape, Device::kGPU, x, dy);
  ExpectNear(gpu.y, cpu.y, 1e-5f, text + ": in-place top");
  ExpectNear(gpu.dx, cpu.dx, 1e-5f, text + ": in-place bottom diff");
}

}  // namespace

TEST(NeuronGpu, InPlaceMatchesCpu) {
  SKIP_WITHOUT_GPU();
  ExpectInPlaceMatchesCpu("name: 'r' type: 'ReLU'", {4, 5, 6});
  ExpectInPlaceMatchesCpu("name: 'r' type: 'ReLU' relu_param { negative_slope: 0.25 }", {4, 5, 6});
  ExpectInPlaceMatchesCpu("name: 's' type: 'Sigmoid'", {3, 50});
  ExpectInPlaceMatchesCpu("name: 't' type: 'TanH'", {3, 50});
  ExpectInPlaceMatchesCpu("name: 'd' type: 'Dropout' phase: TEST", {3, 50});
}

// TEST: the identity (compared with the CPU by layer_table_gpu_test.cpp's rows), with no mask buffer.
TEST(DropoutGpu, TestPhaseNeedsNoMaskBuffer) {
  SKIP_WITHOUT_GPU();
  LayerFixture f("type: 'Dropout' phase: TEST", {{2, 3, 4}}, 1, 1701, Device::kGPU);
  EXPECT_TRUE(f.layer().scratch_buffers().empty());
}

// TRAIN: every output is 0 or x / (1 − r), the mask in the scratch buffer agrees, the kept fraction
// is 1 − r, Backward applies the last Forward's mask, and no device memory is allocated.
TEST(DropoutGpu, TrainMaskValuesFractionAndBackward) {
  SKIP_WITHOUT_GPU();
  for (float ratio : {0.5f, 0.3f, 0.8f, 0.0f}) {
    SCOPED_TRACE("ratio " + std::to_string(ratio));
    const int n = 1 << 20;
    LayerFixture f("type: 'Dropout' phase: TRAIN dropout_param { dropout_ratio: " + std::to_string(ratio) + " }",
                   {{n}}, 1, 1701, Device::kGPU);
    const float scale = 1.0f / (1.0f - ratio);
    const std::vector<float> x = Gaussian(n, 3);
    f.bottom(0).WriteData(x);
    const int64_t allocations = GpuAllocationCount();

    f.Forward();
    f.ctx().Synchronize();
    const std::vector<float> first = f.top(0).ReadData();
    f.Forward();  // a fresh mask: Backward must use this one
    f.ctx().Synchronize();
    const std::vector<float> y = f.top(0).ReadData();
    ASSERT_EQ(f.layer().scratch_buffers().size(), 1u);
    const std::vector<float> mask = f.layer().scratch_buffers()[0].blob->ReadData();
    int64_t kept = 0, bad = 0, changed = 0;
    double sum = 0;
    for (int i = 0; i < n; ++i) {
      const bool keep = mask[i] != 0.0f;
      kept += keep;
      bad += !(mask[i] == 0.0f || mask[i] == scale);
      bad += y[i] != (keep ? x[i] * scale : 0.0f);
      changed += (first[i] != 0.0f) != keep;
      sum += y[i] / x[i];
    }
    EXPECT_EQ(bad, 0) << "outputs or mask values other than 0 and x / (1 - ratio)";
    EXPECT_NEAR(static_cast<double>(kept) / n, 1.0 - ratio, 0.005);
    EXPECT_NEAR(sum / n, 1.0, 0.02) << "E[y] = x";
    if (ratio > 0.0f) {
      EXPECT_GT(changed, n / 10) << "two forwards drew the same mask";
    }

    const std::vector<float> dy = Gaussian(n, 4);
    f.top(0).WriteDiff(dy);
    f.Backward();
    f.ctx().Synchronize();
    const std::vector<float> dx = f.bottom(0).ReadDiff();
    int64_t wrong = 0;
    for (int i = 0; i < n; ++i) wrong += dx[i] != (mask[i] != 0.0f ? dy[i] * scale : 0.0f);
    EXPECT_EQ(wrong, 0) << "Backward did not apply the last Forward's mask";
    EXPECT_EQ(GpuAllocationCount(), allocations);
  }
}

TEST(DropoutGpu, TrainInPlaceAndSeeding) {
  SKIP_WITHOUT_GPU();
  const std::string text = "name: 'd' type: 'Dropout' phase: TRAIN dropout_param { dropout_ratio: 0.25 }";
  std::vector<float> x(5000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 97) + 1.0f;
  const std::vector<float> ones(x.size(), 1.0f);
  const InPlaceRun a = RunInPlace(text, {5000}, Device::kGPU, x, ones);
  const InPlaceRun b = RunInPlace(text, {5000}, Device::kGPU, x, ones);
  int64_t kept = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const bool keep = a.y[i] != 0.0f;
    kept += keep;
    if (keep) EXPECT_EQ(a.y[i], x[i] * (1.0f / 0.75f)) << i;
    EXPECT_EQ(a.dx[i], keep ? 1.0f / 0.75f : 0.0f) << i;
  }
  EXPECT_NEAR(static_cast<double>(kept) / x.size(), 0.75, 0.03);
  EXPECT_EQ(a.y, b.y) << "the same context seed must give the same mask";
}

TEST(EuclideanLossGpu, HandComputedLossAndGradients) {
  SKIP_WITHOUT_GPU();
  LayerFixture f("type: 'EuclideanLoss' loss_weight: 2", {{2, 2}, {2, 2}}, 1, 1701, Device::kGPU);
  f.bottom(0).WriteData({1, 2, 3, 4});
  f.bottom(1).WriteData({0, 1, 1, 0});
  // Σ (a − b)² = 1 + 1 + 4 + 16 = 22; loss = 22 / (2·2) = 5.5; weighted 11.
  EXPECT_FLOAT_EQ(f.Forward(), 11.0f);
  f.ctx().Synchronize();
  EXPECT_FLOAT_EQ(f.top(0).ReadData()[0], 5.5f);
  f.Backward();
  f.ctx().Synchronize();
  // da = weight · (a − b) / N = (a − b); db = −da.
  EXPECT_EQ(f.bottom(0).ReadDiff(), (std::vector<float>{1, 1, 2, 4}));
  EXPECT_EQ(f.bottom(1).ReadDiff(), (std::vector<float>{-1, -1, -2, -4}));
}

}  // namespace cortado::test
