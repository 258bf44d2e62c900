// gpu_compare.cpp — ExpectGpuMatchesCpu: one layer on both devices, the same inputs, every output compared;
// RunForComparison: one device's run of it.
#include "gpu_compare.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include "cortado/net.hpp"

namespace cortado::test {

void ExpectNear(const std::vector<float>& gpu, const std::vector<float>& cpu, float tolerance,
                const std::string& what) {
  ASSERT_EQ(gpu.size(), cpu.size()) << what;
  int reported = 0;
  for (size_t i = 0; i < cpu.size() && reported < 5; ++i) {
    const float allowed = tolerance * std::max(1.0f, std::fabs(cpu[i]));
    if (!(std::fabs(gpu[i] - cpu[i]) <= allowed)) {
      ADD_FAILURE() << what << " element " << i << ": GPU " << gpu[i] << ", CPU " << cpu[i];
      ++reported;
    }
  }
}

void ExpectNearInNorm(const std::vector<float>& gpu, const std::vector<float>& cpu, float relative,
                      const std::string& what) {
  ASSERT_EQ(gpu.size(), cpu.size()) << what;
  double error = 0, norm = 0;
  for (size_t i = 0; i < cpu.size(); ++i) {
    error += (static_cast<double>(gpu[i]) - cpu[i]) * (static_cast<double>(gpu[i]) - cpu[i]);
    norm += static_cast<double>(cpu[i]) * cpu[i];
  }
  EXPECT_LE(std::sqrt(error), relative * std::sqrt(norm) + 1e-30) << what << ": ‖GPU − CPU‖ " << std::sqrt(error)
                                                                    << ", ‖CPU‖ " << std::sqrt(norm);
}

void ExpectGpuClose(const Context& gpu_ctx, const std::vector<float>& gpu, const std::vector<float>& cpu,
                    float fp32_tolerance, const std::string& what, float tf32_relative) {
  if (gpu_ctx.tf32()) {
    ExpectNearInNorm(gpu, cpu, tf32_relative, what + " (TF32)");
  } else {
    ExpectNear(gpu, cpu, fp32_tolerance, what);
  }
}

namespace {

// The number of classes of bottom b's labels; 0 for a Gaussian bottom.
int LabelClasses(const GpuCompareOptions& options, int b) {
  int classes = 0;
  for (const auto& [index, count] : options.label_bottoms)
    if (index == b) classes = count;
  return classes;
}

// Bottom b's values: integer labels for a label bottom, else Gaussian.
std::vector<float> BottomValues(const GpuCompareOptions& options, int b, int64_t count, std::mt19937& rng) {
  std::vector<float> values(static_cast<size_t>(count));
  const int classes = LabelClasses(options, b);
  if (classes > 0) {
    std::uniform_int_distribution<int> label(0, classes - 1);
    for (float& v : values) v = static_cast<float>(label(rng));
  } else {
    std::normal_distribution<float> normal(0.0f, options.input_std);
    for (float& v : values) v = normal(rng);
  }
  return values;
}

// A top's gradient for Backward: standard Gaussian (loss tops are not given one: they keep their
// weight as the gradient).
std::vector<float> TopDiffValues(int64_t count, std::mt19937& rng) {
  std::vector<float> values(static_cast<size_t>(count));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& v : values) v = normal(rng);
  return values;
}

bool IsLabelBottom(const GpuCompareOptions& options, int b) {
  for (const auto& entry : options.label_bottoms)
    if (entry.first == b) return true;
  return false;
}

}  // namespace

ComparedRun RunForComparison(LayerFixture& fixture, const GpuCompareOptions& options) {
  const int num_bottoms = static_cast<int>(fixture.bottom().size());
  const int num_tops = static_cast<int>(fixture.top().size());
  std::mt19937 rng(options.seed + 1);
  for (int b = 0; b < num_bottoms; ++b) fixture.bottom(b).WriteData(BottomValues(options, b, fixture.bottom(b).count(), rng));

  ComparedRun run;
  run.loss = fixture.Forward();
  for (int t = 0; t < num_tops; ++t) run.tops.push_back(fixture.top(t).ReadData());
  if (!options.check_backward) return run;

  for (int t = 0; t < num_tops; ++t)
    if (fixture.layer().loss(t) == 0) fixture.top(t).WriteDiff(TopDiffValues(fixture.top(t).count(), rng));
  fixture.Backward();
  for (int b = 0; b < num_bottoms; ++b) {
    if (IsLabelBottom(options, b) || !fixture.bottom(b).has_diff()) {
      run.bottom_diffs.emplace_back();
    } else {
      run.bottom_diffs.emplace_back(fixture.bottom(b).ReadDiff());
    }
  }
  for (const auto& p : fixture.layer().blobs()) run.param_diffs.push_back(p->ReadDiff());
  return run;
}

void ExpectGpuMatchesCpu(const std::string& layer_text, const std::vector<std::vector<int>>& bottom_shapes,
                         int num_tops, const GpuCompareOptions& options) {
  LayerFixture cpu(layer_text, bottom_shapes, num_tops, options.seed, Device::kCPU);
  GpuSettings settings = StrictFp32();
  settings.strict_fp32 = !options.tf32;
  LayerFixture gpu(layer_text, bottom_shapes, num_tops, options.seed, Device::kGPU, settings);
  const auto compare = [&](const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
    ExpectGpuClose(gpu.ctx(), got, want, options.tolerance, what);
  };
  ASSERT_EQ(gpu.layer().blobs().size(), cpu.layer().blobs().size());
  for (size_t p = 0; p < cpu.layer().blobs().size(); ++p)
    gpu.layer().blobs()[p]->WriteData(cpu.layer().blobs()[p]->ReadData());

  // The same bottoms and top diffs on both (RunForComparison seeds its generator from the options).
  const ComparedRun want = RunForComparison(cpu, options);
  const ComparedRun got = RunForComparison(gpu, options);
  compare({got.loss}, {want.loss}, "loss");
  for (int t = 0; t < num_tops; ++t) compare(got.tops[t], want.tops[t], "top " + std::to_string(t));
  if (!options.check_backward) return;

  for (size_t b = 0; b < want.bottom_diffs.size(); ++b) {
    if (!want.bottom_diffs[b]) continue;
    if (!got.bottom_diffs[b]) {
      ADD_FAILURE() << "bottom " << b << " has a diff on the CPU but none on the GPU";
      continue;
    }
    compare(*got.bottom_diffs[b], *want.bottom_diffs[b], "bottom diff " + std::to_string(b));
  }
  for (size_t p = 0; p < want.param_diffs.size(); ++p)
    compare(got.param_diffs[p], want.param_diffs[p], "parameter diff " + std::to_string(p));
}

ComparedRun RunInTypedNet(const std::string& layer_text, const std::vector<std::vector<int>>& bottom_shapes,
                          int num_tops, const GpuCompareOptions& options, Device device, Type storage,
                          const std::vector<std::vector<float>>* params, std::vector<std::vector<float>>* filled) {
  NetParameter net;
  net.set_name("typed");
  net.set_force_backward(options.check_backward);
  net.set_default_forward_type(storage);
  net.set_default_backward_type(storage);
  net.mutable_state()->set_phase(TRAIN);
  const int num_bottoms = static_cast<int>(bottom_shapes.size());
  std::vector<std::string> names;
  if (num_bottoms > 0) {
    LayerParameter* input = net.add_layer();
    input->set_name("input");
    input->set_type("Input");
    for (int b = 0; b < num_bottoms; ++b) {
      input->add_top("bottom" + std::to_string(b));
      BlobShape* shape = input->mutable_input_param()->add_shape();
      for (int d : bottom_shapes[b]) shape->add_dim(d);
      names.push_back(input->top(b));
    }
  }
  LayerParameter* layer = net.add_layer();
  *layer = ParseLayer(layer_text);
  layer->set_name("row");
  layer->clear_bottom();
  layer->clear_top();
  for (int b = 0; b < num_bottoms; ++b) layer->add_bottom("bottom" + std::to_string(b));
  for (int t = 0; t < num_tops; ++t) {
    layer->add_top("top" + std::to_string(t));
    names.push_back(layer->top(t));
  }
  GpuSettings settings = StrictFp32();
  settings.strict_fp32 = !options.tf32;
  Context ctx(device, options.seed, 0);
  if (device == Device::kGPU) ctx.SetGpuSettings(settings);
  Net typed(net, ctx, "typed net");
  typed.KeepReadable(names);
  typed.AllocateOwnArena();
  Layer& row = *typed.layer_by_name("row");
  if (filled != nullptr)
    for (const auto& p : row.blobs()) filled->push_back(p->ReadData());
  if (params != nullptr)
    for (size_t p = 0; p < row.blobs().size(); ++p) row.blobs()[p]->WriteData((*params)[p]);

  std::mt19937 rng(options.seed + 1);
  for (int b = 0; b < num_bottoms; ++b) {
    Blob* bottom = typed.blob_by_name("bottom" + std::to_string(b));
    bottom->WriteData(BottomValues(options, b, bottom->count(), rng));
  }
  ComparedRun run;
  run.loss = typed.Forward();
  for (int t = 0; t < num_tops; ++t) run.tops.push_back(typed.blob_by_name("top" + std::to_string(t))->ReadData());
  if (!options.check_backward) return run;
  for (int t = 0; t < num_tops; ++t) {
    Blob* top = typed.blob_by_name("top" + std::to_string(t));
    if (row.loss(t) == 0) top->WriteDiff(TopDiffValues(top->count(), rng));
  }
  typed.ClearParamDiffs();
  typed.Backward();
  for (int b = 0; b < num_bottoms; ++b) {
    const Blob* bottom = typed.blob_by_name("bottom" + std::to_string(b));
    if (IsLabelBottom(options, b) || !bottom->has_diff()) {
      run.bottom_diffs.emplace_back();
    } else {
      run.bottom_diffs.emplace_back(bottom->ReadDiff());
    }
  }
  for (const auto& p : row.blobs()) run.param_diffs.push_back(p->ReadDiff());
  return run;
}

void ExpectGpuMatchesCpuInStorage(const std::string& layer_text, const std::vector<std::vector<int>>& bottom_shapes,
                                  int num_tops, const GpuCompareOptions& options, Type storage) {
  std::vector<std::vector<float>> params;
  const ComparedRun want =
      RunInTypedNet(layer_text, bottom_shapes, num_tops, options, Device::kCPU, storage, nullptr, &params);
  const ComparedRun got = RunInTypedNet(layer_text, bottom_shapes, num_tops, options, Device::kGPU, storage, &params);
  const float step = storage == FLOAT16 ? 1.0f / 1024 : 1.0f / 128;  // one 16-bit step, relative
  const float tolerance = options.tolerance + (options.tf32 ? kTf32RelativeError : 0.0f) + step;
  auto compare = [&](const std::vector<float>& a, const std::vector<float>& b, const std::string& what) {
    ExpectNear(a, b, tolerance, what + " (" + Type_Name(storage) + ")");
  };
  compare({got.loss}, {want.loss}, "loss");
  for (int t = 0; t < num_tops; ++t) compare(got.tops[t], want.tops[t], "top " + std::to_string(t));
  for (size_t b = 0; b < want.bottom_diffs.size(); ++b)
    if (want.bottom_diffs[b] && got.bottom_diffs[b])
      compare(*got.bottom_diffs[b], *want.bottom_diffs[b], "bottom diff " + std::to_string(b));
  for (size_t p = 0; p < want.param_diffs.size(); ++p)
    compare(got.param_diffs[p], want.param_diffs[p], "parameter diff " + std::to_string(p));
}

}  // namespace cortado::test
