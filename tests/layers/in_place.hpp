// in_place.hpp — runs one element-wise layer with top == bottom, for the tests that compare it with
// the same layer out of place (tests/layers/*_test.cpp on the CPU, tests/gpu/activation_gpu_test.cpp
// on the GPU). Learnable blobs are filled by InitParams from the context's seed, so both runs hold the
// same parameters.
#pragma once

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cortado/layer_registry.hpp"
#include "cortado/memory.hpp"
#include "test_util.hpp"

namespace cortado::test {

// What a Forward on x and a Backward with top diff dy produced: the top, the bottom diff and the
// learnable blobs' diffs (zero before the Backward).
struct NeuronRun {
  std::vector<float> y, dx;
  std::vector<std::vector<float>> param_diffs;
};

inline NeuronRun RunNeuron(const std::string& text, const std::vector<int>& shape, const std::vector<float>& x,
                           const std::vector<float>& dy, bool in_place, Device device = Device::kCPU,
                           uint32_t seed = 1701) {
  Context ctx(device, seed);
  Blob bottom(shape), separate_top;
  Blob* top = in_place ? &bottom : &separate_top;
  std::unique_ptr<Layer> layer = LayerRegistry::Create(ParseLayer(text), ctx);
  layer->SetUp({&bottom}, {top});
  std::vector<Blob*> blobs = {&bottom};
  if (!in_place) blobs.push_back(top);
  for (const auto& p : layer->blobs()) blobs.push_back(p.get());
  for (const auto& s : layer->scratch_buffers()) blobs.push_back(s.blob);
  std::unique_ptr<Arena> arena = AllocateBlobs(blobs, true, device);
  layer->InitParams();
  bottom.WriteData(x);
  layer->Forward({&bottom}, {top});
  NeuronRun run;
  run.y = top->ReadData();
  top->WriteDiff(dy);
  for (const auto& p : layer->blobs()) p->WriteDiff(std::vector<float>(static_cast<size_t>(p->count()), 0.0f));
  layer->Backward({top}, {true}, {&bottom});
  run.dx = bottom.ReadDiff();
  for (const auto& p : layer->blobs()) run.param_diffs.push_back(p->ReadDiff());
  return run;
}

// n values uniform in [lo, hi), from a generator seeded with `seed`.
inline std::vector<float> UniformValues(size_t n, float lo, float hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(lo, hi);
  std::vector<float> v(n);
  for (float& value : v) value = uniform(rng);
  return v;
}

// The layer in place gives exactly what it gives out of place, on the CPU: top, bottom diff and
// parameter diffs, for inputs uniform in [lo, hi) and top diffs uniform in [−1, 1).
inline void ExpectInPlaceMatchesOutOfPlace(const std::string& text, const std::vector<int>& shape, float lo,
                                           float hi) {
  size_t n = 1;
  for (int d : shape) n *= static_cast<size_t>(d);
  const std::vector<float> x = UniformValues(n, lo, hi, 5), dy = UniformValues(n, -1.0f, 1.0f, 6);
  const NeuronRun apart = RunNeuron(text, shape, x, dy, false);
  const NeuronRun in_place = RunNeuron(text, shape, x, dy, true);
  EXPECT_EQ(in_place.y, apart.y) << text;
  EXPECT_EQ(in_place.dx, apart.dx) << text;
  EXPECT_EQ(in_place.param_diffs, apart.param_diffs) << text;
}

// The number of scratch buffers the layer declares when set up in place on the CPU.
inline size_t InPlaceScratchCount(const std::string& text, const std::vector<int>& shape) {
  Context ctx(Device::kCPU, 1);
  Blob blob(shape);
  std::unique_ptr<Layer> layer = LayerRegistry::Create(ParseLayer(text), ctx);
  layer->SetUp({&blob}, {&blob});
  return layer->scratch_buffers().size();
}

}  // namespace cortado::test
