// sigmoid_test.cpp — Sigmoid against hand-computed values (also in place), and its gradient.
#include <cmath>

#include "cortado/layer_registry.hpp"
#include "test_util.hpp"

namespace cortado::test {

TEST(Sigmoid, ForwardMatchesHandComputedValues) {
  LayerFixture f("type: 'Sigmoid'", {{1, 4}});
  const float in[] = {-2.0f, 0.0f, 1.0f, 3.0f};
  std::copy(in, in + 4, f.bottom(0).data());
  f.Forward();
  const float expected[] = {0.11920292f, 0.5f, 0.73105858f, 0.95257413f};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(f.top(0).data()[i], expected[i], 1e-6f);
}

TEST(Sigmoid, SaturatesWithoutNaN) {
  LayerFixture f("type: 'Sigmoid'", {{2}});
  f.bottom(0).data()[0] = -200.0f;
  f.bottom(0).data()[1] = 200.0f;
  f.Forward();
  EXPECT_EQ(f.top(0).data()[0], 0.0f);
  EXPECT_EQ(f.top(0).data()[1], 1.0f);
}

TEST(Sigmoid, InPlaceBackwardUsesTopData) {
  Context ctx(Device::kCPU, 1);
  Blob blob({3});
  auto layer = LayerRegistry::Create(ParseLayer("name: 's' type: 'Sigmoid'"), ctx);
  layer->SetUp({&blob}, {&blob});
  auto arena = AllocateBlobs({&blob});
  const float x[] = {-1.0f, 0.0f, 2.0f}, dy[] = {1.0f, 2.0f, -3.0f};
  std::copy(x, x + 3, blob.data());
  layer->Forward({&blob}, {&blob});
  std::copy(dy, dy + 3, blob.diff());
  layer->Backward({&blob}, {true}, {&blob});
  for (int i = 0; i < 3; ++i) {
    const float y = 1.0f / (1.0f + std::exp(-x[i]));
    EXPECT_NEAR(blob.data()[i], y, 1e-6f);
    EXPECT_NEAR(blob.diff()[i], dy[i] * y * (1 - y), 1e-6f);
  }
}

TEST(Sigmoid, GradientCheck) {
  LayerFixture f("type: 'Sigmoid'", {{2, 3, 4}});
  f.FillBottoms(2.0f);
  CheckGradient(f);
}

}  // namespace cortado::test
