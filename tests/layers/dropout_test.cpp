// dropout_test.cpp — Dropout: identity in TEST (values and gradient); in TRAIN, Backward applies
// the mask of the last Forward, E[y] ≈ x and the fraction dropped ≈ ratio; in-place use.
#include "cortado/error.hpp"
#include "cortado/layer_registry.hpp"
#include "test_util.hpp"

namespace cortado::test {

TEST(Dropout, TestPhaseIsIdentity) {
  LayerFixture f("type: 'Dropout' phase: TEST", {{2, 3, 4}});
  f.FillBottoms();
  f.Forward();
  for (int64_t i = 0; i < f.bottom(0).count(); ++i)
    EXPECT_EQ(f.top(0).data()[i], f.bottom(0).data()[i]);
  EXPECT_TRUE(f.layer().scratch_buffers().empty());
}

TEST(Dropout, TestPhaseGradientCheck) {
  LayerFixture f("type: 'Dropout' phase: TEST dropout_param { dropout_ratio: 0.3 }", {{2, 3, 4}});
  f.FillBottoms();
  CheckGradient(f);
}

TEST(Dropout, TrainBackwardAppliesTheLastMask) {
  LayerFixture f("type: 'Dropout' phase: TRAIN", {{4, 25}});
  f.FillBottoms();
  const int64_t n = f.bottom(0).count();
  std::vector<float> first;
  for (int pass = 0; pass < 2; ++pass) {
    f.Forward();
    const float* x = f.bottom(0).data();
    const float* y = f.top(0).data();
    int64_t dropped = 0;
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_TRUE(y[i] == 0.0f || y[i] == 2.0f * x[i]) << i;  // scale 1 / (1 − 0.5)
      dropped += y[i] == 0.0f;
    }
    EXPECT_GT(dropped, 0);
    EXPECT_LT(dropped, n);
    FillUniform(&f.top(0), f.rng(), -1.0f, 1.0f);  // fills data: copy it into the diff
    std::vector<float> dy(f.top(0).data(), f.top(0).data() + n);
    std::copy(dy.begin(), dy.end(), f.top(0).diff());
    f.Forward();  // a fresh mask: Backward must use this one
    std::vector<float> kept(n);
    for (int64_t i = 0; i < n; ++i) kept[i] = f.top(0).data()[i] != 0.0f;
    f.Backward();
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(f.bottom(0).diff()[i], kept[i] * 2.0f * dy[i]) << i;
    if (pass == 0) {
      first = kept;
    } else {
      EXPECT_NE(first, kept) << "two forwards drew the same mask";
    }
  }
}

TEST(Dropout, TrainStatistics) {
  for (float ratio : {0.5f, 0.3f, 0.8f}) {
    LayerFixture f("type: 'Dropout' phase: TRAIN dropout_param { dropout_ratio: " +
                       std::to_string(ratio) + " }",
                   {{200000}});
    for (int64_t i = 0; i < f.bottom(0).count(); ++i) f.bottom(0).data()[i] = 1.5f;
    f.Forward();
    double sum = 0;
    int64_t zeros = 0;
    const int64_t n = f.top(0).count();
    for (int64_t i = 0; i < n; ++i) {
      sum += f.top(0).data()[i];
      zeros += f.top(0).data()[i] == 0.0f;
    }
    EXPECT_NEAR(sum / n, 1.5, 0.02) << "ratio " << ratio;
    EXPECT_NEAR(static_cast<double>(zeros) / n, ratio, 0.01) << "ratio " << ratio;
  }
}

TEST(Dropout, TrainInPlace) {
  Context ctx(Device::kCPU, 3);
  Blob blob({50});
  auto layer = LayerRegistry::Create(ParseLayer("name: 'd' type: 'Dropout' phase: TRAIN "
                                                "dropout_param { dropout_ratio: 0.25 }"),
                                     ctx);
  layer->SetUp({&blob}, {&blob});
  std::vector<Blob*> blobs = {&blob};
  for (const auto& s : layer->scratch_buffers()) blobs.push_back(s.blob);
  auto arena = AllocateBlobs(blobs);
  for (int i = 0; i < 50; ++i) blob.data()[i] = i + 1.0f;
  layer->Forward({&blob}, {&blob});
  std::vector<bool> kept(50);
  for (int i = 0; i < 50; ++i) {
    kept[i] = blob.data()[i] != 0.0f;
    if (kept[i]) EXPECT_FLOAT_EQ(blob.data()[i], (i + 1.0f) / 0.75f);
    blob.diff()[i] = 1.0f;
  }
  layer->Backward({&blob}, {true}, {&blob});
  for (int i = 0; i < 50; ++i) EXPECT_FLOAT_EQ(blob.diff()[i], kept[i] ? 1.0f / 0.75f : 0.0f);
}

TEST(Dropout, BadRatioIsAnError) {
  EXPECT_THROW(LayerFixture("type: 'Dropout' dropout_param { dropout_ratio: 1 }", {{2}}), Error);
  EXPECT_THROW(LayerFixture("type: 'Dropout' dropout_param { dropout_ratio: -0.1 }", {{2}}), Error);
}

}  // namespace cortado::test
