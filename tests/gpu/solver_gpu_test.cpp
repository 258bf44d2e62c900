// solver_gpu_test.cpp — the solver's arithmetic on the GPU against the CPU's: three steps of every
// update rule after gradient clipping and L2 or L1 weight decay, on flat buffers whose segments have
// different lr_mult and decay_mult (some 0), gaps between them that nothing may touch, and more
// segments than one kernel launch takes; clipping below the threshold and switched off; the
// finiteness check; history copies in and out.
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "cortado/divergence.hpp"
#include "cortado/memory.hpp"
#include "cortado/update_rules.hpp"
#include "gpu_compare.hpp"

namespace cortado::test {

namespace {

constexpr float kGap = 123.0f;

// Segments: a large one, then 150 small ones (more than kGpuSegmentsPerLaunch) with varied
// multipliers, some separated by one-element gaps, then another large one; 4 gap elements at the end.
std::vector<ParamSegment> MakeSegments(int64_t* count) {
  std::vector<ParamSegment> segments;
  int64_t offset = 0;
  segments.push_back({offset, 5000, 1.0f, 1.0f});
  offset += 5000 + 3;
  const float lr[] = {1.0f, 0.5f, 2.0f, 0.0f};
  const float decay[] = {1.0f, 0.0f, 0.25f};
  for (int s = 0; s < 150; ++s) {
    const int64_t n = 1 + (s * 7) % 40;
    segments.push_back({offset, n, lr[s % 4], decay[s % 3]});
    offset += n + (s % 5 == 0 ? 1 : 0);
  }
  segments.push_back({offset, 70000, 1.5f, 2.0f});
  offset += 70000;
  *count = offset + 4;
  return segments;
}

std::vector<bool> Covered(const std::vector<ParamSegment>& segments, int64_t count) {
  std::vector<bool> covered(static_cast<size_t>(count), false);
  for (const auto& s : segments)
    for (int64_t i = 0; i < s.count; ++i) covered[s.offset + i] = true;
  return covered;
}

// `count` floats with gaps at kGap and Gaussian values (scaled) elsewhere.
std::vector<float> Values(const std::vector<bool>& covered, uint32_t seed, float std, float mean = 0.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(mean, std);
  std::vector<float> v(covered.size());
  for (size_t i = 0; i < v.size(); ++i) v[i] = covered[i] ? normal(rng) : kGap;
  return v;
}

// Device arrays of `count` floats (one arena), written and read in order with the context's stream.
struct DeviceFloats {
  DeviceFloats(int count, int arrays) {
    for (int k = 0; k < arrays; ++k) blobs.push_back(std::make_unique<Blob>(std::vector<int>{count}));
    std::vector<Blob*> raw;
    for (auto& b : blobs) raw.push_back(b.get());
    arena = AllocateBlobs(raw, false, Device::kGPU);
  }
  float* operator[](int k) { return blobs[k]->data(); }
  std::vector<std::unique_ptr<Blob>> blobs;
  std::unique_ptr<Arena> arena;
};

void Upload(Context& ctx, const std::vector<float>& host, float* device) {
  gpu_upload(ctx, static_cast<int64_t>(host.size()), host.data(), device);
}
std::vector<float> Download(Context& ctx, const float* device, int64_t count) {
  std::vector<float> host(static_cast<size_t>(count));
  gpu_download(ctx, count, device, host.data());
  return host;
}

// Weights away from 0 (|w| >= 0.5, which three steps cannot cross), so L1's sign(w) is the same on both
// devices despite rounding differences.
std::vector<float> Weights(const std::vector<bool>& covered, uint32_t seed) {
  std::vector<float> w = Values(covered, seed, 0.5f);
  for (size_t i = 0; i < w.size(); ++i)
    if (covered[i]) w[i] = (i % 2 ? 1.0f : -1.0f) * (0.5f + std::fabs(w[i]));
  return w;
}

void ExpectGapsUntouched(const std::vector<float>& gpu, const std::vector<bool>& covered, const std::string& what) {
  int reported = 0;
  for (size_t i = 0; i < gpu.size() && reported < 5; ++i)
    if (!covered[i] && gpu[i] != kGap) {
      ADD_FAILURE() << what << ": gap element " << i << " became " << gpu[i];
      ++reported;
    }
}

struct RuleCase {
  std::string type;
  std::string extra;
  std::string regularization;
};

class SolverGpu : public testing::TestWithParam<RuleCase> {};

// Three steps of clip → decay → update on both devices, from the same weights and gradients.
TEST_P(SolverGpu, StepsEqualTheCpusWithClippingAndDecay) {
  SKIP_WITHOUT_GPU();
  const RuleCase& c = GetParam();
  SolverParameter param = ParseSolver("type: '" + c.type + "' weight_decay: 0.01 regularization_type: '" +
                                      c.regularization + "' " + c.extra);
  int64_t count = 0;
  const std::vector<ParamSegment> segments = MakeSegments(&count);
  const std::vector<bool> covered = Covered(segments, count);
  const auto cpu_rule = UpdateRule::Create(param);
  const auto gpu_rule = UpdateRule::Create(param);
  const int histories = cpu_rule->num_history();

  Context cpu_ctx(Device::kCPU, 1);
  Context gpu_ctx(Device::kGPU, 1);
  std::vector<float> data = Weights(covered, 1), diff(covered.size(), kGap);
  std::vector<std::vector<float>> hist(histories, std::vector<float>(covered.size()));
  for (auto& h : hist)
    for (size_t i = 0; i < h.size(); ++i) h[i] = covered[i] ? 0.0f : kGap;
  DeviceFloats device(static_cast<int>(count), 2 + histories);
  Upload(gpu_ctx, data, device[0]);
  Upload(gpu_ctx, diff, device[1]);
  std::vector<float*> cpu_history, gpu_history;
  for (int k = 0; k < histories; ++k) {
    Upload(gpu_ctx, hist[k], device[2 + k]);
    cpu_history.push_back(hist[k].data());
    gpu_history.push_back(device[2 + k]);
  }
  FlatParams cpu_flat{data.data(), diff.data(), count, segments};
  FlatParams gpu_flat{device[0], device[1], count, segments};

  const float rates[] = {0.05f, 0.02f, 0.01f};
  for (int step = 0; step < 3; ++step) {
    SCOPED_TRACE(c.type + " " + c.regularization + ", step " + std::to_string(step));
    const int iter = 4 + step;  // Adam's bias correction follows iter
    const std::vector<float> grad = Values(covered, 100 + step, 1.0f + step, 0.1f);
    diff = grad;
    Upload(gpu_ctx, grad, device[1]);
    const float clip = 50.0f;  // the gradients' norm is ~300: clipping scales them
    const float cpu_norm = ClipGradients(cpu_ctx, cpu_flat, clip);
    const float gpu_norm = ClipGradients(gpu_ctx, gpu_flat, clip);
    ASSERT_GT(cpu_norm, clip);
    EXPECT_NEAR(gpu_norm, cpu_norm, 1e-5f * cpu_norm) << "gradient norm";
    Regularize(cpu_ctx, cpu_flat, param);
    Regularize(gpu_ctx, gpu_flat, param);
    cpu_rule->ApplyOn(cpu_ctx, cpu_flat, cpu_history, rates[step], iter);
    gpu_rule->ApplyOn(gpu_ctx, gpu_flat, gpu_history, rates[step], iter);

    const std::vector<float> gpu_data = Download(gpu_ctx, device[0], count);
    const std::vector<float> gpu_diff = Download(gpu_ctx, device[1], count);
    ExpectNear(gpu_data, data, 1e-5f, "weights");
    ExpectNear(gpu_diff, diff, 1e-5f, "update left in the gradient");
    ExpectGapsUntouched(gpu_data, covered, "weights");
    ExpectGapsUntouched(gpu_diff, covered, "gradient");
    for (int k = 0; k < histories; ++k) {
      const std::vector<float> gpu_hist = Download(gpu_ctx, device[2 + k], count);
      ExpectNear(gpu_hist, hist[k], 1e-5f, "history " + std::to_string(k));
      ExpectGapsUntouched(gpu_hist, covered, "history " + std::to_string(k));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllRules, SolverGpu,
    testing::Values(RuleCase{"SGD", "momentum: 0.9", "L2"}, RuleCase{"SGD", "momentum: 0.9", "L1"},
                    RuleCase{"Nesterov", "momentum: 0.95", "L2"}, RuleCase{"Nesterov", "momentum: 0.95", "L1"},
                    RuleCase{"AdaGrad", "delta: 1e-6", "L2"}, RuleCase{"AdaGrad", "delta: 1e-6", "L1"},
                    RuleCase{"RMSProp", "rms_decay: 0.98 delta: 1e-6", "L2"},
                    RuleCase{"RMSProp", "rms_decay: 0.98 delta: 1e-6", "L1"},
                    RuleCase{"AdaDelta", "momentum: 0.95 delta: 1e-6", "L2"},
                    RuleCase{"AdaDelta", "momentum: 0.95 delta: 1e-6", "L1"},
                    RuleCase{"Adam", "momentum: 0.9 momentum2: 0.999", "L2"},
                    RuleCase{"Adam", "momentum: 0.9 momentum2: 0.999", "L1"}),
    [](const testing::TestParamInfo<RuleCase>& info) { return info.param.type + "_" + info.param.regularization; });

TEST(SolverGpuClip, BelowTheThresholdOrSwitchedOffLeavesGradients) {
  SKIP_WITHOUT_GPU();
  Context ctx(Device::kGPU, 1);
  int64_t count = 0;
  const std::vector<ParamSegment> segments = MakeSegments(&count);
  const std::vector<bool> covered = Covered(segments, count);
  const std::vector<float> grad = Values(covered, 7, 0.01f);
  DeviceFloats device(static_cast<int>(count), 2);
  Upload(ctx, grad, device[1]);
  FlatParams flat{device[0], device[1], count, segments};
  double sumsq = 0;
  for (size_t i = 0; i < grad.size(); ++i)
    if (covered[i]) sumsq += double{grad[i]} * grad[i];
  const float norm = ClipGradients(ctx, flat, 1000.0f);
  EXPECT_NEAR(norm, std::sqrt(sumsq), 1e-5 * std::sqrt(sumsq));
  EXPECT_EQ(Download(ctx, device[1], count), grad);
  EXPECT_EQ(ClipGradients(ctx, flat, -1.0f), -1.0f);
  EXPECT_EQ(Download(ctx, device[1], count), grad);
}

TEST(SolverGpuFinite, AllFiniteFindsNaNAndInfinity) {
  SKIP_WITHOUT_GPU();
  Context ctx(Device::kGPU, 1);
  std::vector<float> values(100000, 1.5f);
  DeviceFloats device(static_cast<int>(values.size()), 1);
  Upload(ctx, values, device[0]);
  EXPECT_TRUE(AllFinite(ctx, device[0], static_cast<int64_t>(values.size())));
  values[77777] = std::nanf("");
  Upload(ctx, values, device[0]);
  EXPECT_FALSE(AllFinite(ctx, device[0], static_cast<int64_t>(values.size())));
  values[77777] = 1.0f;
  values.back() = -INFINITY;
  Upload(ctx, values, device[0]);
  EXPECT_FALSE(AllFinite(ctx, device[0], static_cast<int64_t>(values.size())));
  EXPECT_TRUE(AllFinite(ctx, device[0], static_cast<int64_t>(values.size()) - 1));
}

TEST(SolverGpuCopies, UploadAndDownloadRoundTrip) {
  SKIP_WITHOUT_GPU();
  Context ctx(Device::kGPU, 1);
  std::vector<float> values(12345);
  for (size_t i = 0; i < values.size(); ++i) values[i] = 0.25f * static_cast<float>(i) - 7.0f;
  DeviceFloats device(static_cast<int>(values.size()), 1);
  Upload(ctx, values, device[0]);
  EXPECT_EQ(Download(ctx, device[0], static_cast<int64_t>(values.size())), values);
}

}  // namespace

}  // namespace cortado::test
