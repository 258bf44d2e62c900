// bandwidth_bench_test.cpp — the memory-bound microbenchmark of the GPU check, not a test: disabled in
// the suite, scripts/bench/gpu.sh's `bandwidth` stage runs it by name with
// --gtest_also_run_disabled_tests. Over 256 MiB tensors it times, in one run, a device-to-device copy
// (the reference) and the memory-bound steps a net spends its bandwidth on: ReLU, Scale and BatchNorm
// forward (global statistics: the normalisation pass alone) and the SGD update (weights, gradients and
// history read and written). Each prints "RESULT op=NAME gbps=G ratio=R" (bytes it must move per
// second, and the fraction of the copy's rate), and the benchmark fails when a ratio is below 0.80.
#include <chrono>
#include <cstdio>
#include <functional>

#include "cortado/gpu.hpp"
#include "cortado/math_gpu.hpp"
#include "cortado/update_rules.hpp"
#include "gpu_compare.hpp"  // SKIP_WITHOUT_GPU

namespace cortado::test {

namespace {

constexpr int64_t kFloats = int64_t{64} * 256 * 64 * 64;  // 256 MiB of floats
constexpr double kBytes = static_cast<double>(kFloats) * sizeof(float);
constexpr int kWarmUp = 3, kRepeats = 20;
constexpr double kTarget = 0.80;

// Bytes moved per second by `step`, which moves `bytes` each time it runs.
double Rate(Context& ctx, double bytes, const std::function<void()>& step) {
  for (int i = 0; i < kWarmUp; ++i) step();
  ctx.Synchronize();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kRepeats; ++i) step();
  ctx.Synchronize();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return bytes * kRepeats / seconds;
}

// One layer's Forward over a bottom of kFloats values: the bottom read and the top written.
double LayerRate(const std::string& text) {
  LayerFixture f(text, {{64, 256, 64, 64}}, 1, 1701, Device::kGPU);
  return Rate(f.ctx(), 2 * kBytes, [&] { f.layer().Forward(f.bottom(), f.top()); });
}

struct GpuBuffer {
  explicit GpuBuffer(int64_t n) : data(static_cast<float*>(GpuAllocate(n * sizeof(float)))) {}
  ~GpuBuffer() { GpuFree(data); }
  float* data;
};

}  // namespace

TEST(DISABLED_BandwidthBench, MemoryBoundStepsReachEightyPercentOfTheCopyRate) {
  SKIP_WITHOUT_GPU();
  Context ctx(Device::kGPU);
  double copy = 0;
  {
    GpuBuffer x(kFloats), y(kFloats);
    copy = Rate(ctx, 2 * kBytes, [&] { gpu_copy(ctx, kFloats, x.data, y.data); });
  }
  std::printf("RESULT op=copy gbps=%.1f ratio=1.00\n", copy / 1e9);
  auto report = [&](const char* op, double rate) {
    const double ratio = rate / copy;
    std::printf("RESULT op=%s gbps=%.1f ratio=%.2f\n", op, rate / 1e9, ratio);
    EXPECT_GE(ratio, kTarget) << op << " moves " << rate / 1e9 << " GB/s against the copy's " << copy / 1e9;
  };
  report("relu", LayerRate("type: 'ReLU'"));
  report("scale", LayerRate("type: 'Scale' scale_param { bias_term: true }"));
  report("batchnorm", LayerRate("type: 'BatchNorm' batch_norm_param { use_global_stats: true }"));
  {
    GpuBuffer w(kFloats), g(kFloats), h(kFloats);
    FlatParams params{w.data, g.data, kFloats, {{0, kFloats, 1.0f, 1.0f}}};
    UpdateConstants sgd;
    sgd.kind = UpdateConstants::kSGD;
    sgd.mu = 0.9f;
    report("sgd_update", Rate(ctx, 6 * kBytes, [&] { gpu_update(ctx, sgd, params, {h.data}, 0.01f); }));
  }
}

}  // namespace cortado::test
