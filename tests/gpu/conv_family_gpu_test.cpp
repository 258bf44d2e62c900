// conv_family_gpu_test.cpp — Deconvolution, SPP and STOCHASTIC pooling on the GPU beyond the plain
// CPU-against-GPU comparisons of Deconvolution (pad / stride / dilation / group / bias / several
// bottoms) and SPP (MAX, AVE, one level), which are rows of layer_table_gpu_test.cpp: Deconvolution's
// parameter gradients accumulating; SPP with STOCHASTIC pooling; STOCHASTIC pooling in TEST (values
// and gradient) and TRAIN (every output a positive value of its window, the gradient routed to the
// sampled elements, the samples the CPU's since both run the same window arithmetic), with no device
// allocation in Forward or Backward.
#include <algorithm>
#include <random>

#include "gpu_compare.hpp"

namespace cortado::test {

namespace {

const std::string kFillers =
    " weight_filler { type: 'gaussian' std: 0.5 } bias_filler { type: 'gaussian' std: 0.5 } ";

std::vector<float> Uniform(int64_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(rng);
  return v;
}

// A layer on both devices over the same bottom x and top diff dy (fixture seed 1701 on both).
struct BothDevices {
  BothDevices(const std::string& text, const std::vector<int>& shape)
      : cpu(text, {shape}, 1, 1701, Device::kCPU), gpu(text, {shape}, 1, 1701, Device::kGPU) {}
  void Run(const std::vector<float>& x, const std::vector<float>& dy) {
    cpu.bottom(0).WriteData(x);
    gpu.bottom(0).WriteData(x);
    const int64_t allocations = GpuAllocationCount();
    cpu.Forward();
    gpu.Forward();
    cpu.top(0).WriteDiff(dy);
    gpu.top(0).WriteDiff(dy);
    cpu.Backward();
    gpu.Backward();
    gpu.ctx().Synchronize();
    EXPECT_EQ(GpuAllocationCount(), allocations) << "Forward or Backward allocated device memory";
  }
  LayerFixture cpu, gpu;
};

}  // namespace

// ---- Deconvolution ---------------------------------------------------------------------------------

TEST(ConvFamilyGpu, DeconvolutionParamDiffsAccumulate) {
  SKIP_WITHOUT_GPU();
  const std::string text =
      "type: 'Deconvolution' convolution_param { num_output: 4 group: 2 kernel_size: 3 stride: 2" + kFillers + "}";
  LayerFixture f(text, {{2, 4, 3, 3}}, 1, 7, Device::kGPU);
  f.bottom(0).WriteData(Uniform(f.bottom(0).count(), 1, -1.0f, 1.0f));
  f.Forward();
  f.top(0).WriteDiff(Uniform(f.top(0).count(), 2, -1.0f, 1.0f));
  f.Backward();  // zeroes the parameter gradients first
  f.ctx().Synchronize();
  std::vector<std::vector<float>> once;
  for (auto& p : f.layer().blobs()) once.push_back(p->ReadDiff());
  f.layer().Backward(f.top(), {true}, f.bottom());
  f.ctx().Synchronize();
  for (size_t p = 0; p < once.size(); ++p) {
    std::vector<float> twice = once[p];
    for (float& v : twice) v *= 2;
    ExpectNear(f.layer().blobs()[p]->ReadDiff(), twice, 1e-5f, "parameter diff " + std::to_string(p));
  }
}

// ---- SPP -------------------------------------------------------------------------------------------

// STOCHASTIC, over positive inputs (MAX and AVE are rows of layer_table_gpu_test.cpp).
TEST(ConvFamilyGpu, SppMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  for (const char* phase : {"TEST", "TRAIN"}) {
    SCOPED_TRACE(phase);
    BothDevices d(std::string("type: 'SPP' phase: ") + phase + " spp_param { pyramid_height: 3 pool: STOCHASTIC }",
                  {2, 3, 8, 4});
    d.Run(Uniform(2 * 3 * 8 * 4, 3, 0.1f, 2.0f), Uniform(d.cpu.top(0).count(), 4, -1.0f, 1.0f));
    ExpectNear(d.gpu.top(0).ReadData(), d.cpu.top(0).ReadData(), 1e-5f, "top");
    ExpectNear(d.gpu.bottom(0).ReadDiff(), d.cpu.bottom(0).ReadDiff(), 1e-5f, "bottom diff");
  }
}

// ---- STOCHASTIC pooling -------------------------------------------------------------------------------

TEST(ConvFamilyGpu, StochasticPoolingTestPhaseMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  for (const char* window : {"kernel_size: 3 stride: 2", "kernel_size: 2 stride: 2", "kernel_size: 1 stride: 3",
                             "kernel_h: 3 kernel_w: 2 stride_h: 1 stride_w: 2", "global_pooling: true"}) {
    SCOPED_TRACE(window);
    BothDevices d(std::string("type: 'Pooling' phase: TEST pooling_param { pool: STOCHASTIC ") + window + " }",
                  {2, 3, 7, 9});
    // Positive inputs, with some zeros, so Σx stays well away from 0.
    std::vector<float> x = Uniform(2 * 3 * 7 * 9, 5, -0.5f, 2.0f);
    for (float& v : x) v = std::max(v, 0.0f);
    d.Run(x, Uniform(d.cpu.top(0).count(), 6, -1.0f, 1.0f));
    ExpectNear(d.gpu.top(0).ReadData(), d.cpu.top(0).ReadData(), 1e-5f, "top");
    ExpectNear(d.gpu.bottom(0).ReadDiff(), d.cpu.bottom(0).ReadDiff(), 1e-4f, "bottom diff");
  }
}

TEST(ConvFamilyGpu, StochasticPoolingTrainSamplesAndRouting) {
  SKIP_WITHOUT_GPU();
  // Overlapping 3×3 windows, stride 2, over a 9×8 plane (4×4 outputs, the last column of windows
  // clipped); half the inputs are zero.
  const int planes = 6, h = 9, w = 8, oh = 4, ow = 4;
  BothDevices d("type: 'Pooling' phase: TRAIN pooling_param { pool: STOCHASTIC kernel_size: 3 stride: 2 }",
                {2, 3, h, w});
  std::vector<float> x = Uniform(planes * h * w, 7, -1.0f, 1.0f);
  for (float& v : x) v = std::max(v, 0.0f);
  std::vector<float> dy(planes * oh * ow);
  for (size_t q = 0; q < dy.size(); ++q) dy[q] = q + 1.0f;
  d.Run(x, dy);
  const std::vector<float> y = d.gpu.top(0).ReadData(), dx = d.gpu.bottom(0).ReadDiff();
  std::vector<float> routed(x.size(), 0.0f);
  for (int p = 0; p < planes; ++p)
    for (int r = 0; r < oh; ++r)
      for (int c = 0; c < ow; ++c) {
        const int q = (p * oh + r) * ow + c;
        bool positive = false;
        for (int i = 2 * r; i < std::min(2 * r + 3, h); ++i)
          for (int j = 2 * c; j < std::min(2 * c + 3, w); ++j) positive |= x[p * h * w + i * w + j] > 0;
        // A window of zeros yields its first element.
        int where = positive ? -1 : p * h * w + 2 * r * w + 2 * c;
        for (int i = 2 * r; i < std::min(2 * r + 3, h) && positive; ++i)
          for (int j = 2 * c; j < std::min(2 * c + 3, w); ++j)
            if (where < 0 && y[q] > 0 && x[p * h * w + i * w + j] == y[q]) where = p * h * w + i * w + j;
        ASSERT_GE(where, 0) << "output " << q << " = " << y[q] << " is not a positive value of its window";
        routed[where] += dy[q];
      }
  ExpectNear(dx, routed, 0.0f, "bottom diff (routed to the samples)");
  // Both devices run the same window arithmetic from the same seed: the same samples.
  ExpectNear(y, d.cpu.top(0).ReadData(), 0.0f, "top (GPU samples against the CPU's)");
  ExpectNear(dx, d.cpu.bottom(0).ReadDiff(), 0.0f, "bottom diff (GPU against the CPU)");
}

}  // namespace cortado::test
