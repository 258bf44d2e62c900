// norm_gpu_test.cpp — the normalisation layers on the GPU beyond the plain CPU-against-GPU
// comparisons of LRN, BatchNorm with batch statistics, Scale and Bias (every form, and per-channel sums
// split into several chunks per channel: rows of layer_table_gpu_test.cpp): BatchNorm's running sums
// over two forwards, global statistics in TEST, and in place with the top overwritten before Backward;
// Scale and Bias in place; BatchNorm with scale_bias (running sums, global statistics, in place); the
// chunked channel sums (BatchNorm, Scale, Bias) bit for bit the same over two runs; no device allocation
// in a step. (Every tabled type claims GPU support exactly when built
// with CUDA: layer_table_gpu_test.cpp.)
#include <cmath>
#include <cstring>
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

int64_t Count(const std::vector<int>& shape) {
  int64_t n = 1;
  for (int d : shape) n *= d;
  return n;
}

// What one run of a layer produced, read back to the host.
struct LayerRun {
  std::vector<float> y, dx;
  std::vector<std::vector<float>> params, param_diffs;
};

void ReadParams(Layer& layer, LayerRun* run) {
  for (auto& p : layer.blobs()) {
    run->params.push_back(p->ReadData());
    run->param_diffs.push_back(p->ReadDiff());
  }
}

void ExpectRunsMatch(const LayerRun& gpu, const LayerRun& cpu, float tolerance, const std::string& what) {
  ExpectNear(gpu.y, cpu.y, tolerance, what + ": top");
  ExpectNear(gpu.dx, cpu.dx, tolerance, what + ": bottom diff");
  ASSERT_EQ(gpu.params.size(), cpu.params.size()) << what;
  for (size_t p = 0; p < cpu.params.size(); ++p) {
    ExpectNear(gpu.params[p], cpu.params[p], tolerance, what + ": blob " + std::to_string(p));
    ExpectNear(gpu.param_diffs[p], cpu.param_diffs[p], tolerance, what + ": blob diff " + std::to_string(p));
  }
}

// One bottom, one top, out of place: the blobs set to `params` (when given), `forwards` forward passes
// on x, then Backward with dy.
LayerRun RunLayer(const std::string& text, const std::vector<int>& shape, Device device, int forwards,
             const std::vector<std::vector<float>>& params = {}) {
  LayerFixture f(text, {shape}, 1, 1701, device);
  for (size_t p = 0; p < params.size(); ++p) f.layer().blobs()[p]->WriteData(params[p]);
  f.bottom(0).WriteData(Gaussian(static_cast<size_t>(Count(shape)), 21));
  for (int i = 0; i < forwards; ++i) f.Forward();
  f.ctx().Synchronize();
  LayerRun run;
  run.y = f.top(0).ReadData();
  f.top(0).WriteDiff(Gaussian(static_cast<size_t>(Count(shape)), 22));
  f.Backward();
  f.ctx().Synchronize();
  run.dx = f.bottom(0).ReadDiff();
  ReadParams(f.layer(), &run);
  return run;
}

// The same with top == bottom; the top's data is overwritten between Forward and Backward, as a later
// in-place layer would.
LayerRun RunInPlace(const std::string& text, const std::vector<int>& shape, Device device) {
  Context ctx(device, 1701);
  Blob blob(shape);
  std::unique_ptr<Layer> layer = LayerRegistry::Create(ParseLayer(text), ctx);
  layer->SetUp({&blob}, {&blob});
  std::vector<Blob*> blobs = {&blob};
  for (auto& p : layer->blobs()) blobs.push_back(p.get());
  for (const auto& s : layer->scratch_buffers()) blobs.push_back(s.blob);
  std::unique_ptr<Arena> arena = AllocateBlobs(blobs, true, device);
  layer->InitParams();
  for (auto& p : layer->blobs()) p->WriteDiff(std::vector<float>(static_cast<size_t>(p->count()), 0.0f));
  const size_t n = static_cast<size_t>(blob.count());
  blob.WriteData(Gaussian(n, 21));
  layer->Forward({&blob}, {&blob});
  ctx.Synchronize();
  LayerRun run;
  run.y = blob.ReadData();
  blob.WriteData(std::vector<float>(n, 7.0f));
  blob.WriteDiff(Gaussian(n, 22));
  layer->Backward({&blob}, {true}, {&blob});
  ctx.Synchronize();
  run.dx = blob.ReadDiff();
  ReadParams(*layer, &run);
  return run;
}

// Forward and Backward twice on one GPU layer with the same bottoms and top diff: the top, the bottom
// diffs and the parameter diffs must be the same bits both times (the chunked channel sums add their
// partials in a fixed order, without atomics).
void ExpectRepeatable(const std::string& text, const std::vector<std::vector<int>>& shapes) {
  SCOPED_TRACE(text);
  LayerFixture f(text, shapes, 1, 1701, Device::kGPU);
  for (size_t b = 0; b < shapes.size(); ++b)
    f.bottom(static_cast<int>(b)).WriteData(Gaussian(static_cast<size_t>(Count(shapes[b])), 21 + b));
  f.top(0).WriteDiff(Gaussian(static_cast<size_t>(f.top(0).count()), 30));
  std::vector<std::vector<float>> first;
  for (int run = 0; run < 2; ++run) {
    f.Forward();
    f.Backward();
    f.ctx().Synchronize();
    std::vector<std::vector<float>> out = {f.top(0).ReadData()};
    for (Blob* b : f.bottom()) out.push_back(b->ReadDiff());
    for (auto& p : f.layer().blobs()) out.push_back(p->ReadDiff());
    if (run == 0) {
      first = out;
      continue;
    }
    ASSERT_EQ(out.size(), first.size());
    for (size_t k = 0; k < out.size(); ++k) {
      ASSERT_EQ(out[k].size(), first[k].size());
      EXPECT_EQ(std::memcmp(out[k].data(), first[k].data(), out[k].size() * sizeof(float)), 0)
          << "result " << k << " (top, bottom diffs, parameter diffs) differs between two runs";
    }
  }
}

}  // namespace

TEST(BatchNormGpu, RunningSumsOverTwoForwardsMatchCpu) {
  SKIP_WITHOUT_GPU();
  for (const std::vector<int>& shape : {std::vector<int>{6, 3}, std::vector<int>{2, 4, 3, 5}}) {
    const std::string text = "type: 'BatchNorm' batch_norm_param { moving_average_fraction: 0.9 }";
    const LayerRun cpu = RunLayer(text, shape, Device::kCPU, 2);
    const LayerRun gpu = RunLayer(text, shape, Device::kGPU, 2);
    ExpectRunsMatch(gpu, cpu, 1e-4f, "two forwards");
    EXPECT_NEAR(gpu.params[2][0], 1.9f, 1e-6);
  }
}

TEST(BatchNormGpu, GlobalStatisticsMatchCpu) {
  SKIP_WITHOUT_GPU();
  const std::vector<std::vector<float>> stats = {{1, -2, 0.5f}, {4, 0.5f, 2}, {2}};
  for (const char* text : {"type: 'BatchNorm' phase: TEST",
                           "type: 'BatchNorm' batch_norm_param { use_global_stats: true eps: 0.001 }"}) {
    SCOPED_TRACE(text);
    const LayerRun cpu = RunLayer(text, {2, 3, 4, 4}, Device::kCPU, 1, stats);
    const LayerRun gpu = RunLayer(text, {2, 3, 4, 4}, Device::kGPU, 1, stats);
    ExpectRunsMatch(gpu, cpu, 1e-4f, "global");
    EXPECT_EQ(gpu.params[2][0], 2.0f) << "global statistics must not change the running sums";
  }
  // A zero weight: zero statistics.
  const std::vector<std::vector<float>> zero = {{3, 3, 3}, {3, 3, 3}, {0}};
  ExpectRunsMatch(RunLayer("type: 'BatchNorm' phase: TEST", {2, 3}, Device::kGPU, 1, zero),
                  RunLayer("type: 'BatchNorm' phase: TEST", {2, 3}, Device::kCPU, 1, zero), 1e-4f, "zero weight");
}

TEST(BatchNormGpu, InPlaceMatchesCpu) {
  SKIP_WITHOUT_GPU();
  for (const char* text : {"name: 'bn' type: 'BatchNorm'", "name: 'bn' type: 'BatchNorm' phase: TEST"}) {
    SCOPED_TRACE(text);
    const LayerRun cpu = RunInPlace(text, {4, 3, 5, 5}, Device::kCPU);
    const LayerRun gpu = RunInPlace(text, {4, 3, 5, 5}, Device::kGPU);
    ExpectRunsMatch(gpu, cpu, 1e-4f, "in place");
  }
}

TEST(BatchNormGpu, ScaleBiasMatchesCpu) {
  SKIP_WITHOUT_GPU();
  const std::string fillers = " scale_filler { type: 'gaussian' mean: 1 std: 0.5 } bias_filler { type: 'gaussian' } ";
  const std::vector<std::vector<float>> stats = {{1, -2, 0.5f}, {4, 0.5f, 2}, {2}, {1.5f, -0.5f, 0.8f}, {0.3f, 1, -2}};
  for (const std::vector<int>& shape : {std::vector<int>{6, 3}, std::vector<int>{2, 3, 4, 5}}) {
    SCOPED_TRACE(testing::PrintToString(shape));
    const std::string train = "type: 'BatchNorm' batch_norm_param { scale_bias: true moving_average_fraction: 0.9" + fillers + "}";
    ExpectRunsMatch(RunLayer(train, shape, Device::kGPU, 2), RunLayer(train, shape, Device::kCPU, 2), 1e-4f,
                    "two forwards");
    for (const std::string text : {"type: 'BatchNorm' phase: TEST batch_norm_param { scale_bias: true }",
                                   "type: 'BatchNorm' batch_norm_param { scale_bias: true use_global_stats: true }"}) {
      SCOPED_TRACE(text);
      ExpectRunsMatch(RunLayer(text, shape, Device::kGPU, 1, stats), RunLayer(text, shape, Device::kCPU, 1, stats),
                      1e-4f, "global");
    }
  }
  const std::string in_place = "name: 'bn' type: 'BatchNorm' batch_norm_param { scale_bias: true" + fillers + "}";
  ExpectRunsMatch(RunInPlace(in_place, {4, 3, 5, 5}, Device::kGPU), RunInPlace(in_place, {4, 3, 5, 5}, Device::kCPU),
                  1e-4f, "in place");
}

TEST(ScaleGpu, InPlaceMatchesCpu) {
  SKIP_WITHOUT_GPU();
  const std::string text =
      "name: 's' type: 'Scale' scale_param { bias_term: true filler { type: 'gaussian' } bias_filler { type: 'gaussian' } }";
  ExpectRunsMatch(RunInPlace(text, {4, 3, 5, 5}, Device::kGPU), RunInPlace(text, {4, 3, 5, 5}, Device::kCPU), 1e-4f,
                  "in place");
}

TEST(BiasGpu, InPlaceMatchesCpu) {
  SKIP_WITHOUT_GPU();
  const std::string text = "name: 'b' type: 'Bias' bias_param { filler { type: 'gaussian' } }";
  ExpectRunsMatch(RunInPlace(text, {4, 3, 5}, Device::kGPU), RunInPlace(text, {4, 3, 5}, Device::kCPU), 1e-4f,
                  "in place");
}

// Shapes whose channels split into several chunks of the GPU's channel sums (kernels/channel_sums.hpp):
// chunk boundaries inside an image, a thread's stride across images, spatial 1, the grid's full target;
// 3 and 5 channels divide neither the grid nor the chunks evenly.
const std::vector<std::vector<int>> kChunkedShapes = {
    {8, 3, 67, 67},     // 9 chunks of 3991 values per channel, images of 4489
    {300, 5, 7, 7},     // 4 chunks; a thread's step of 256 values spans 5 images and 11 positions
    {20000, 3},         // 5 chunks, spatial 1
    {40, 5, 150, 150},  // 205 chunks: kChannelSumBlocks / channels, rounded up
};
const std::string kGaussianFillers = " filler { type: 'gaussian' } bias_filler { type: 'gaussian' } ";

TEST(NormGpu, ChunkedChannelSumsAreRepeatableBitForBit) {
  SKIP_WITHOUT_GPU();
  for (const std::vector<int>& shape : {kChunkedShapes[0], kChunkedShapes[3]}) {
    SCOPED_TRACE(testing::PrintToString(shape));
    ExpectRepeatable("type: 'BatchNorm' phase: TRAIN batch_norm_param { use_global_stats: false }", {shape});
    ExpectRepeatable("type: 'BatchNorm' batch_norm_param { scale_bias: true scale_filler { type: 'gaussian' } }", {shape});
    ExpectRepeatable("type: 'Scale' scale_param { axis: 1 bias_term: true" + kGaussianFillers + "}", {shape});
    ExpectRepeatable("type: 'Bias' bias_param { filler { type: 'gaussian' } }", {shape});
  }
  ExpectRepeatable("type: 'Scale' scale_param { bias_term: true" + kGaussianFillers + "}", {{8, 3, 67, 67}, {3}});
}

TEST(NormGpu, NoDeviceAllocationInAStep) {
  SKIP_WITHOUT_GPU();
  for (const char* text : {"type: 'LRN'", "type: 'LRN' lrn_param { norm_region: WITHIN_CHANNEL }", "type: 'BatchNorm'",
                           "type: 'BatchNorm' phase: TEST", "type: 'BatchNorm' batch_norm_param { scale_bias: true }",
                           "type: 'Scale' scale_param { bias_term: true }", "type: 'Bias'"}) {
    SCOPED_TRACE(text);
    LayerFixture f(text, {{2, 6, 5, 5}}, 1, 1701, Device::kGPU);
    f.bottom(0).WriteData(Gaussian(300, 3));
    f.top(0).WriteDiff(Gaussian(300, 4));
    f.ctx().Synchronize();
    const int64_t allocations = GpuAllocationCount();
    f.Forward();
    f.Backward();
    f.ctx().Synchronize();
    EXPECT_EQ(GpuAllocationCount(), allocations);
  }
}

}  // namespace cortado::test
