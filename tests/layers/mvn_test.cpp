// mvn_test.cpp — MVN: per-channel and across-channel normalisation by hand, eps on a constant channel,
// mean only, Caffe's legacy 4-D top shape, Caffe's backward formula by hand, in place, gradient checks
// and the axis limit.
#include <cmath>

#include "cortado/error.hpp"
#include "in_place.hpp"
#include "test_util.hpp"

namespace cortado::test {

TEST(MVN, NormalizesEachChannelByHand) {
  LayerFixture f("type: 'MVN'", {{1, 2, 1, 3}});
  const float x[] = {1, 2, 3, 2, 2, 2};
  std::copy(x, x + 6, f.bottom(0).data());
  f.Forward();
  // Channel 0: mean 2, variance 2/3; channel 1 is constant: 0 / (0 + eps) = 0.
  const float s = std::sqrt(2.0f / 3.0f) + 1e-9f;
  const float y[] = {-1 / s, 0, 1 / s, 0, 0, 0};
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(f.top(0).data()[i], y[i], 1e-6f) << i;
}

TEST(MVN, AcrossChannelsAndMeanOnly) {
  const float x[] = {1, 2, 3, 5, 5, 8};  // mean 4, Σ(x − 4)² = 9 + 4 + 1 + 1 + 1 + 16 = 32
  {
    LayerFixture f("type: 'MVN' mvn_param { across_channels: true eps: 0.5 }", {{1, 2, 1, 3}});
    std::copy(x, x + 6, f.bottom(0).data());
    f.Forward();
    const float s = std::sqrt(32.0f / 6.0f) + 0.5f;
    for (int i = 0; i < 6; ++i) EXPECT_NEAR(f.top(0).data()[i], (x[i] - 4) / s, 1e-6f) << i;
  }
  {
    LayerFixture f("type: 'MVN' mvn_param { normalize_variance: false }", {{1, 2, 1, 3}});
    std::copy(x, x + 6, f.bottom(0).data());
    f.Forward();
    const float y[] = {-1, 0, 1, -1, -1, 2};
    for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(f.top(0).data()[i], y[i]) << i;
  }
}

TEST(MVN, BackwardIsCaffesFormula) {
  // dx = (dy − (Σ(y·dy)·y + Σdy) / dim) / s, per row.
  LayerFixture f("type: 'MVN' mvn_param { eps: 0.25 }", {{2, 1, 1, 4}});
  const float x[] = {1, 2, 4, 9, -3, 0, 3, 1};
  const float dy[] = {0.5f, -1, 2, 0.25f, 1, 1, -2, 3};
  std::copy(x, x + 8, f.bottom(0).data());
  f.Forward();
  std::copy(dy, dy + 8, f.top(0).diff());
  f.Backward();
  for (int r = 0; r < 2; ++r) {
    double mean = 0, var = 0;
    for (int i = 0; i < 4; ++i) mean += x[r * 4 + i] / 4.0;
    for (int i = 0; i < 4; ++i) var += (x[r * 4 + i] - mean) * (x[r * 4 + i] - mean) / 4.0;
    const double s = std::sqrt(var) + 0.25;
    double a = 0, b = 0;
    for (int i = 0; i < 4; ++i) {
      const double y = (x[r * 4 + i] - mean) / s;
      EXPECT_NEAR(f.top(0).data()[r * 4 + i], y, 1e-6);
      a += y * dy[r * 4 + i];
      b += dy[r * 4 + i];
    }
    for (int i = 0; i < 4; ++i) {
      const double y = (x[r * 4 + i] - mean) / s;
      EXPECT_NEAR(f.bottom(0).diff()[r * 4 + i], (dy[r * 4 + i] - (a * y + b) / 4) / s, 1e-5) << r << "," << i;
    }
  }
}

TEST(MVN, TopHasCaffesLegacyFourAxes) {
  LayerFixture two("type: 'MVN'", {{2, 3}});
  EXPECT_EQ(two.top(0).shape(), (std::vector<int>{2, 3, 1, 1}));
  LayerFixture three("type: 'MVN'", {{2, 3, 5}});
  EXPECT_EQ(three.top(0).shape(), (std::vector<int>{2, 3, 5, 1}));
  const std::string message = ErrorOf([] { LayerFixture("name: 'm' type: 'MVN'", {{1, 2, 3, 4, 5}}); });
  EXPECT_NE(message.find("layer m (MVN): takes a bottom of at most 4 axes"), std::string::npos) << message;
}

TEST(MVN, InPlaceMatchesOutOfPlace) {
  for (const char* text : {"type: 'MVN'", "type: 'MVN' mvn_param { normalize_variance: false }",
                           "type: 'MVN' mvn_param { across_channels: true }"})
    ExpectInPlaceMatchesOutOfPlace(text, {2, 3, 2, 2}, -2.0f, 3.0f);
}

TEST(MVN, GradientCheck) {
  for (const char* p : {"", "normalize_variance: false", "across_channels: true",
                        "across_channels: true normalize_variance: false"}) {
    SCOPED_TRACE(p);
    LayerFixture f(std::string("type: 'MVN' mvn_param { ") + p + " }", {{2, 3, 2, 3}});
    f.FillBottoms();
    GradientCheckOptions o;
    o.step = 1e-3f;
    CheckGradient(f, o);
  }
}

}  // namespace cortado::test
