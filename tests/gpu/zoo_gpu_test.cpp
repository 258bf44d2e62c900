// zoo_gpu_test.cpp — Embed, MVN, Parameter, Filter, BatchReindex and InfogainLoss on the GPU beyond
// the plain CPU-against-GPU comparisons (rows of layer_table_gpu_test.cpp, forward only for Embed,
// Filter and BatchReindex): their backward passes with propagate_down false for the index bottom
// (which they refuse a gradient, as in Caffe) over chosen indices and selectors; MVN in place;
// Parameter's top and accumulating diff; InfogainLoss with its matrix from a file; bad indices and
// labels give the CPU's error; no device allocation after setup.
#include <cmath>
#include <random>

#include "cortado/error.hpp"
#include "cortado/io.hpp"
#include "gpu_compare.hpp"
#include "layers/in_place.hpp"

namespace cortado::test {

namespace {

GpuCompareOptions Labels(int bottom, int classes, bool backward = true) {
  GpuCompareOptions o;
  o.label_bottoms = {{bottom, classes}};
  o.check_backward = backward;
  return o;
}

// Runs `text` on both devices over the given bottom values: Forward (tops compared), then Backward with
// the same Gaussian top diffs and `down`, comparing the diffs of the bottoms that propagate and of the
// learnable blobs (the CPU layer's values are copied to the GPU layer first).
void ExpectBackwardMatches(const std::string& text, const std::vector<std::vector<int>>& shapes,
                           const std::vector<std::vector<float>>& values, int num_tops, const std::vector<bool>& down,
                           float tolerance = 1e-4f) {
  LayerFixture cpu(text, shapes, num_tops, 1701, Device::kCPU);
  LayerFixture gpu(text, shapes, num_tops, 1701, Device::kGPU);
  for (size_t p = 0; p < cpu.layer().blobs().size(); ++p)
    gpu.layer().blobs()[p]->WriteData(cpu.layer().blobs()[p]->ReadData());
  for (size_t b = 0; b < shapes.size(); ++b) {
    cpu.bottom(static_cast<int>(b)).WriteData(values[b]);
    gpu.bottom(static_cast<int>(b)).WriteData(values[b]);
  }
  cpu.Forward();
  gpu.Forward();
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int t = 0; t < num_tops; ++t) {
    ASSERT_EQ(gpu.top(t).shape(), cpu.top(t).shape()) << "top " << t;
    ExpectNear(gpu.top(t).ReadData(), cpu.top(t).ReadData(), tolerance, "top " + std::to_string(t));
    std::vector<float> diff(static_cast<size_t>(cpu.top(t).count()));
    for (float& v : diff) v = normal(rng);
    cpu.top(t).WriteDiff(diff);
    gpu.top(t).WriteDiff(diff);
  }
  for (LayerFixture* f : {&cpu, &gpu}) {
    for (auto& p : f->layer().blobs()) p->WriteDiff(std::vector<float>(static_cast<size_t>(p->count()), 0.0f));
    f->layer().Backward(f->top(), down, f->bottom());
  }
  for (size_t b = 0; b < shapes.size(); ++b)
    if (down[b])
      ExpectNear(gpu.bottom(static_cast<int>(b)).ReadDiff(), cpu.bottom(static_cast<int>(b)).ReadDiff(), tolerance,
                 "bottom diff " + std::to_string(b));
  for (size_t p = 0; p < cpu.layer().blobs().size(); ++p)
    ExpectNear(gpu.layer().blobs()[p]->ReadDiff(), cpu.layer().blobs()[p]->ReadDiff(), tolerance,
               "parameter diff " + std::to_string(p));
}

std::vector<float> Gaussian(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

std::vector<float> Integers(size_t n, int classes, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> pick(0, classes - 1);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(pick(rng));
  return v;
}

// The message of the Forward of `text` on `device` over the given bottoms ("" when it does not throw).
std::string ForwardError(const std::string& text, const std::vector<std::vector<int>>& shapes,
                         const std::vector<std::vector<float>>& values, Device device) {
  LayerFixture f(text, shapes, 1, 1701, device);
  for (size_t b = 0; b < shapes.size(); ++b) f.bottom(static_cast<int>(b)).WriteData(values[b]);
  try {
    f.Forward();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// ---- Embed ---------------------------------------------------------------------------------------------

TEST(ZooGpu, EmbedMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  for (const char* bias : {"true", "false"}) {
    const std::string text = std::string("type: 'Embed' embed_param { num_output: 7 input_dim: 11 bias_term: ") +
                             bias + " weight_filler { type: 'gaussian' } bias_filler { type: 'gaussian' } }";
    // Repeated indices: the atomicAdd scatter must add them all.
    ExpectBackwardMatches(text, {{64}}, {Integers(64, 3, 1)}, 1, {false});
  }
}

TEST(ZooGpu, EmbedBadIndexIsTheCpusError) {
  SKIP_WITHOUT_GPU();
  const std::string text = "name: 'e' type: 'Embed' embed_param { num_output: 3 input_dim: 4 }";
  for (float bad : {4.0f, -1.0f, 2.5f}) {
    const std::vector<std::vector<float>> values = {{0, 3, bad, 1, bad}};
    const std::string cpu = ForwardError(text, {{5}}, values, Device::kCPU);
    EXPECT_NE(cpu.find("(at position 2)"), std::string::npos) << cpu;
    EXPECT_EQ(ForwardError(text, {{5}}, values, Device::kGPU), cpu);
  }
}

// ---- MVN -----------------------------------------------------------------------------------------------

TEST(ZooGpu, MVNInPlaceMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  const std::vector<int> shape = {2, 3, 4, 5};
  const std::vector<float> x = UniformValues(120, -2.0f, 3.0f, 5), dy = UniformValues(120, -1.0f, 1.0f, 6);
  for (const char* text : {"type: 'MVN'", "type: 'MVN' mvn_param { across_channels: true }"}) {
    const NeuronRun cpu = RunNeuron(text, shape, x, dy, true, Device::kCPU);
    const NeuronRun gpu = RunNeuron(text, shape, x, dy, true, Device::kGPU);
    ExpectNear(gpu.y, cpu.y, 1e-4f, std::string(text) + " top");
    ExpectNear(gpu.dx, cpu.dx, 1e-4f, std::string(text) + " bottom diff");
  }
}

// ---- Parameter -----------------------------------------------------------------------------------------

TEST(ZooGpu, ParameterMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  const std::string text = "type: 'Parameter' parameter_param { shape { dim: 3 dim: 4 dim: 5 } }";
  LayerFixture cpu(text, {}, 1, 1701, Device::kCPU);
  LayerFixture gpu(text, {}, 1, 1701, Device::kGPU);
  const std::vector<float> values = Gaussian(60, 3), diff = Gaussian(60, 4);
  cpu.layer().blobs()[0]->WriteData(values);
  gpu.layer().blobs()[0]->WriteData(values);
  cpu.Forward();
  gpu.Forward();
  ExpectNear(gpu.top(0).ReadData(), values, 0.0f, "top");
  for (LayerFixture* f : {&cpu, &gpu}) {
    f->top(0).WriteDiff(diff);
    f->Backward();
    f->layer().Backward(f->top(), {}, f->bottom());  // accumulates: 2·diff
  }
  ExpectNear(gpu.layer().blobs()[0]->ReadDiff(), cpu.layer().blobs()[0]->ReadDiff(), 1e-6f, "parameter diff");
  EXPECT_FLOAT_EQ(gpu.layer().blobs()[0]->ReadDiff()[7], 2 * diff[7]);
}

// ---- Filter --------------------------------------------------------------------------------------------

TEST(ZooGpu, FilterMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  const std::vector<std::vector<int>> shapes = {{10, 3, 2}, {10, 4}, {10, 1, 1}};
  const std::vector<float> selectors[] = {{0, 1, 1, 0, 0, 0, 1, 0, 1, 1}, std::vector<float>(10, 1.0f),
                                          std::vector<float>(10, 0.0f), {0, 0, 0, 0, 0, 0, 0, 0, 0, -3}};
  for (const auto& selector : selectors)
    ExpectBackwardMatches("type: 'Filter'", shapes, {Gaussian(60, 1), Gaussian(40, 2), selector}, 2,
                          {true, true, false});
}

// ---- BatchReindex --------------------------------------------------------------------------------------

TEST(ZooGpu, BatchReindexMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  ExpectBackwardMatches("type: 'BatchReindex'", {{6, 3, 4}, {20}}, {Gaussian(72, 1), Integers(20, 6, 2)}, 1,
                        {true, false});
  ExpectBackwardMatches("type: 'BatchReindex'", {{5, 300}, {3}}, {Gaussian(1500, 3), {4, 4.5f, 0}}, 1,
                        {true, false});
}

TEST(ZooGpu, BatchReindexBadIndexIsTheCpusError) {
  SKIP_WITHOUT_GPU();
  const std::string text = "name: 'r' type: 'BatchReindex'";
  for (float bad : {3.0f, -1.0f}) {
    const std::vector<std::vector<float>> values = {Gaussian(6, 1), {0, 2, 1, bad, bad}};
    const std::string cpu = ForwardError(text, {{3, 2}, {5}}, values, Device::kCPU);
    EXPECT_NE(cpu.find("(at position 3)"), std::string::npos) << cpu;
    EXPECT_EQ(ForwardError(text, {{3, 2}, {5}}, values, Device::kGPU), cpu);
  }
}

// ---- InfogainLoss --------------------------------------------------------------------------------------

TEST(ZooGpu, InfogainLossFromAFileMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  BlobProto proto;
  proto.mutable_shape()->add_dim(4);
  proto.mutable_shape()->add_dim(4);
  for (float v : Gaussian(16, 9)) proto.add_data(std::fabs(v));
  const std::string path = NewTempDir() + "/h.binaryproto";
  WriteProtoToBinaryFile(proto, path);
  const std::string text = "type: 'InfogainLoss' infogain_loss_param { source: '" + path + "' }";
  ExpectGpuMatchesCpu(text, {{16, 4}, {16}}, 2, Labels(1, 4));
  // The matrix goes to the device once; later passes reuse it.
  LayerFixture gpu(text, {{16, 4}, {16}}, 1, 1701, Device::kGPU);
  LayerFixture cpu(text, {{16, 4}, {16}}, 1, 1701, Device::kCPU);
  const std::vector<float> x = Gaussian(64, 1), labels = Integers(16, 4, 2);
  for (LayerFixture* f : {&cpu, &gpu}) {
    f->bottom(0).WriteData(x);
    f->bottom(1).WriteData(labels);
  }
  const float first = gpu.Forward();
  const int64_t allocations = GpuAllocationCount();
  EXPECT_NEAR(gpu.Forward(), first, 1e-6f);
  gpu.Backward();
  EXPECT_EQ(GpuAllocationCount(), allocations);
  EXPECT_NEAR(first, cpu.Forward(), 1e-4f);
}

TEST(ZooGpu, InfogainLossBadLabelIsTheCpusError) {
  SKIP_WITHOUT_GPU();
  const std::string text = "name: 'loss' type: 'InfogainLoss'";
  const std::vector<std::vector<float>> values = {Gaussian(12, 1), {0, 2, 5, 7}, Gaussian(9, 2)};
  const std::string cpu = ForwardError(text, {{4, 3}, {4}, {3, 3}}, values, Device::kCPU);
  EXPECT_NE(cpu.find("label 5 (at position 2)"), std::string::npos) << cpu;
  EXPECT_EQ(ForwardError(text, {{4, 3}, {4}, {3, 3}}, values, Device::kGPU), cpu);
}

// ---- no allocation in a step ---------------------------------------------------------------------------

TEST(ZooGpu, NoDeviceAllocationAfterSetup) {
  SKIP_WITHOUT_GPU();
  LayerFixture embed("type: 'Embed' embed_param { num_output: 4 input_dim: 6 }", {{8}}, 1, 1701, Device::kGPU);
  embed.bottom(0).WriteData(Integers(8, 6, 1));
  LayerFixture filter("type: 'Filter'", {{8, 3}, {8}}, 1, 1701, Device::kGPU);
  filter.bottom(0).WriteData(Gaussian(24, 1));
  filter.bottom(1).WriteData(Integers(8, 2, 3));
  LayerFixture reindex("type: 'BatchReindex'", {{8, 3}, {5}}, 1, 1701, Device::kGPU);
  reindex.bottom(0).WriteData(Gaussian(24, 1));
  reindex.bottom(1).WriteData(Integers(5, 8, 4));
  LayerFixture mvn("type: 'MVN'", {{2, 3, 4, 5}}, 1, 1701, Device::kGPU);
  const int64_t allocations = GpuAllocationCount();
  for (int step = 0; step < 2; ++step) {
    embed.Forward();
    embed.layer().Backward(embed.top(), {false}, embed.bottom());
    filter.Forward();
    filter.layer().Backward(filter.top(), {true, false}, filter.bottom());
    reindex.Forward();
    reindex.layer().Backward(reindex.top(), {true, false}, reindex.bottom());
    mvn.Forward();
    mvn.Backward();
  }
  EXPECT_EQ(GpuAllocationCount(), allocations);
}

}  // namespace cortado::test
