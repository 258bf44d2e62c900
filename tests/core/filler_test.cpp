// filler_test.cpp — each filler's values against its definition (ranges, moments, normalisation).
#include <cmath>

#include "cortado/error.hpp"
#include "cortado/filler.hpp"
#include "cortado/io.hpp"
#include "cortado/memory.hpp"
#include "test_util.hpp"

namespace cortado::test {

namespace {

struct Filled {
  Blob blob;
  std::unique_ptr<Arena> arena;
  Filled(const std::vector<int>& shape, const std::string& filler_text) : blob(shape) {
    arena = AllocateBlobs({&blob}, false);
    FillerParameter filler;
    ReadProtoFromTextString(filler_text, &filler);
    std::mt19937 rng(1234);
    FillBlob(filler, &blob, rng);
  }
  double mean() const {
    double s = 0;
    for (int64_t i = 0; i < blob.count(); ++i) s += blob.data()[i];
    return s / blob.count();
  }
  double variance() const {
    const double m = mean();
    double s = 0;
    for (int64_t i = 0; i < blob.count(); ++i) s += (blob.data()[i] - m) * (blob.data()[i] - m);
    return s / blob.count();
  }
};

}  // namespace

TEST(Filler, Constant) {
  Filled f({2, 3, 4}, "type: 'constant' value: 2.5");
  for (int64_t i = 0; i < f.blob.count(); ++i) EXPECT_EQ(f.blob.data()[i], 2.5f);
}

TEST(Filler, UniformStaysInRange) {
  Filled f({100, 100}, "type: 'uniform' min: -2 max: 3");
  for (int64_t i = 0; i < f.blob.count(); ++i) {
    EXPECT_GE(f.blob.data()[i], -2.0f);
    EXPECT_LE(f.blob.data()[i], 3.0f);
  }
  EXPECT_NEAR(f.mean(), 0.5, 0.05);
}

TEST(Filler, GaussianMoments) {
  Filled f({200, 100}, "type: 'gaussian' mean: 1 std: 0.5");
  EXPECT_NEAR(f.mean(), 1.0, 0.02);
  EXPECT_NEAR(std::sqrt(f.variance()), 0.5, 0.02);
}

TEST(Filler, SparseGaussianKeepsAboutSparseInputsPerOutput) {
  Filled f({100, 400}, "type: 'gaussian' std: 1 sparse: 20");
  int64_t nonzero = 0;
  for (int64_t i = 0; i < f.blob.count(); ++i) nonzero += f.blob.data()[i] != 0.0f;
  // Probability of keeping an element = sparse / num_outputs = 20 / 100.
  EXPECT_NEAR(static_cast<double>(nonzero) / f.blob.count(), 0.2, 0.01);
}

TEST(Filler, XavierBoundFromFanIn) {
  Filled f({50, 20, 5, 5}, "type: 'xavier'");
  const float bound = std::sqrt(3.0f / (20 * 5 * 5));
  for (int64_t i = 0; i < f.blob.count(); ++i) EXPECT_LE(std::fabs(f.blob.data()[i]), bound);
  EXPECT_NEAR(f.variance(), bound * bound / 3, 0.05 * bound * bound / 3);
}

TEST(Filler, XavierFanOutAndAverage) {
  Filled out({50, 20, 5, 5}, "type: 'xavier' variance_norm: FAN_OUT");
  const float out_bound = std::sqrt(3.0f / (50 * 5 * 5));
  for (int64_t i = 0; i < out.blob.count(); ++i) EXPECT_LE(std::fabs(out.blob.data()[i]), out_bound);
  Filled avg({50, 20, 5, 5}, "type: 'xavier' variance_norm: AVERAGE");
  const float avg_bound = std::sqrt(3.0f / ((50 * 25 + 20 * 25) / 2.0f));
  EXPECT_NEAR(avg.variance(), avg_bound * avg_bound / 3, 0.05 * avg_bound * avg_bound / 3);
}

TEST(Filler, MsraStd) {
  Filled f({64, 32, 3, 3}, "type: 'msra'");
  EXPECT_NEAR(std::sqrt(f.variance()), std::sqrt(2.0 / (32 * 9)), 0.01);
  EXPECT_NEAR(f.mean(), 0.0, 0.01);
}

TEST(Filler, PositiveUnitballRowsSumToOne) {
  Filled f({7, 30}, "type: 'positive_unitball'");
  for (int r = 0; r < 7; ++r) {
    double sum = 0;
    for (int j = 0; j < 30; ++j) {
      EXPECT_GE(f.blob.data()[r * 30 + j], 0.0f);
      sum += f.blob.data()[r * 30 + j];
    }
    EXPECT_NEAR(sum, 1.0, 1e-5);
  }
}

TEST(Filler, BilinearKernel) {
  // k = 4: f = 2, c = 3/4; weights (1 − |x/2 − 0.75|)(1 − |y/2 − 0.75|) → rows 0.25 0.75 0.75 0.25.
  Filled f({1, 1, 4, 4}, "type: 'bilinear'");
  const float w[] = {0.25f, 0.75f, 0.75f, 0.25f};
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 4; ++x) EXPECT_FLOAT_EQ(f.blob.data()[y * 4 + x], w[y] * w[x]);
}

TEST(Filler, UnknownTypeIsAnError) {
  Blob blob({2});
  auto arena = AllocateBlobs({&blob}, false);
  FillerParameter filler;
  filler.set_type("glorot");
  std::mt19937 rng(1);
  EXPECT_THROW(FillBlob(filler, &blob, rng), Error);
}

}  // namespace cortado::test
