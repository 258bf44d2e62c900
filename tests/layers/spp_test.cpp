// spp_test.cpp — SPP: top shapes (pyramid_height 1 keeps Pooling's 4-D top), pyramid_height 2 by hand
// for MAX and AVE on a 5×3 input whose second level needs padding, the levels equal to stand-alone
// Pooling layers (MAX, AVE, STOCHASTIC in TEST), finite-difference gradients, and the user errors.
#include <algorithm>
#include <sstream>

#include "cortado/error.hpp"
#include "test_util.hpp"

namespace cortado::test {
namespace {

std::string Spp(const std::string& param) { return "name: 'spp' type: 'SPP' spp_param { " + param + " }"; }

// Distinct values, shuffled, spaced 0.1 apart: maxima are unique and survive a ±0.01 nudge.
void FillDistinct(Blob& blob, uint32_t seed) {
  std::vector<float> v(blob.count());
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.1f * (static_cast<float>(i) - v.size() / 2.0f);
  std::shuffle(v.begin(), v.end(), std::mt19937(seed));
  std::copy(v.begin(), v.end(), blob.data());
}

}  // namespace

TEST(SPP, Shapes) {
  LayerFixture one(Spp("pyramid_height: 1"), {{2, 3, 5, 7}});
  EXPECT_EQ(one.top(0).shape(), (std::vector<int>{2, 3, 1, 1}));
  LayerFixture two(Spp("pyramid_height: 2"), {{2, 3, 5, 7}});
  EXPECT_EQ(two.top(0).shape(), (std::vector<int>{2, 3 * (1 + 4)}));
  LayerFixture three(Spp("pyramid_height: 3 pool: AVE"), {{1, 2, 13, 9}});
  EXPECT_EQ(three.top(0).shape(), (std::vector<int>{1, 2 * (1 + 4 + 16)}));
}

TEST(SPP, HandWorkedPyramidHeightTwo) {
  // x = 1..15 as 5×3, two images (the second is x + 100) of one channel. Level 0: the whole image.
  // Level 1: kernel 3×2, pad 1×1 (ceil(5/2) = 3, (6 − 5 + 1)/2 = 1; ceil(3/2) = 2, (4 − 3 + 1)/2 = 1),
  // stride 3×2: rows {0,1} | {2,3,4}, columns {0} | {1,2}; AVE divides every window by 3·2 = 6.
  //   1  2  3
  //   4  5  6
  //   7  8  9
  //  10 11 12
  //  13 14 15
  for (const char* pool : {"MAX", "AVE"}) {
    SCOPED_TRACE(pool);
    LayerFixture f(Spp(std::string("pyramid_height: 2 pool: ") + pool), {{2, 1, 5, 3}});
    ASSERT_EQ(f.top(0).shape(), (std::vector<int>{2, 5}));
    for (int i = 0; i < 15; ++i) f.bottom(0).data()[i] = i + 1.0f;
    for (int i = 0; i < 15; ++i) f.bottom(0).data()[15 + i] = i + 101.0f;
    f.Forward();
    const bool max = pool[0] == 'M';
    const float first[5] = {max ? 15.0f : 8.0f,          // level 0
                            max ? 4.0f : (1 + 4) / 6.0f,  // level 1: rows 0-1, column 0
                            max ? 6.0f : (2 + 3 + 5 + 6) / 6.0f,
                            max ? 13.0f : (7 + 10 + 13) / 6.0f,
                            max ? 15.0f : (8 + 9 + 11 + 12 + 14 + 15) / 6.0f};
    // The second image adds 100 to every pixel: AVE windows then gain 100·pixels/6.
    const float pixels[5] = {15, 2, 4, 3, 6};
    for (int i = 0; i < 5; ++i) {
      EXPECT_FLOAT_EQ(f.top(0).data()[i], first[i]) << i;
      EXPECT_FLOAT_EQ(f.top(0).data()[5 + i], first[i] + (max ? 100.0f : 100.0f * pixels[i] / (i == 0 ? 15 : 6)))
          << i;
    }
    // Backward: MAX routes each output's gradient to its maximum, summed over the levels (15 is the
    // maximum of level 0 and of the last level-1 window).
    if (!max) continue;
    for (int i = 0; i < 10; ++i) f.top(0).diff()[i] = i + 1.0f;
    f.Backward();
    float expected[30] = {};
    for (int image = 0; image < 2; ++image) {
      const float* dy = f.top(0).diff() + 5 * image;
      float* dx = expected + 15 * image;
      dx[14] = dy[0] + dy[4];
      dx[3] = dy[1];
      dx[5] = dy[2];
      dx[12] = dy[3];
    }
    for (int i = 0; i < 30; ++i) EXPECT_FLOAT_EQ(f.bottom(0).diff()[i], expected[i]) << i;
  }
}

TEST(SPP, LevelsArePoolingLayers) {
  // Level i of SPP equals a Pooling layer with its kernel, pad and stride, flattened per image.
  const int n = 2, c = 3, h = 8, w = 4;  // no level needs padding (STOCHASTIC has none)
  for (const char* pool : {"MAX", "AVE", "STOCHASTIC"}) {
    SCOPED_TRACE(pool);
    LayerFixture spp(Spp(std::string("pyramid_height: 3 pool: ") + pool) + " phase: TEST", {{n, c, h, w}});
    std::mt19937 rng(3);
    FillUniform(&spp.bottom(0), rng, 0.1f, 2.0f);
    spp.Forward();
    const int total = spp.top(0).shape(1);
    int offset = 0;
    for (int level = 0; level < 3; ++level) {
      const int bins = 1 << level, kh = (h + bins - 1) / bins, kw = (w + bins - 1) / bins;
      std::ostringstream text;
      text << "type: 'Pooling' phase: TEST pooling_param { pool: " << pool << " kernel_h: " << kh << " kernel_w: " << kw
           << " stride_h: " << kh << " stride_w: " << kw << " pad_h: " << (kh * bins - h + 1) / 2
           << " pad_w: " << (kw * bins - w + 1) / 2 << " }";
      LayerFixture p(text.str(), {{n, c, h, w}});
      std::copy(spp.bottom(0).data(), spp.bottom(0).data() + spp.bottom(0).count(), p.bottom(0).data());
      p.Forward();
      const int len = c * bins * bins;
      ASSERT_EQ(p.top(0).count(), n * len);
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < len; ++j)
          EXPECT_FLOAT_EQ(spp.top(0).data()[i * total + offset + j], p.top(0).data()[i * len + j])
              << "level " << level << " image " << i << " value " << j;
      offset += len;
    }
    EXPECT_EQ(offset, total);
  }
}

TEST(SPP, GradientCheck) {
  {
    LayerFixture f(Spp("pyramid_height: 3"), {{2, 2, 7, 6}});
    FillDistinct(f.bottom(0), 5);
    CheckGradient(f);
  }
  {
    LayerFixture f(Spp("pyramid_height: 3 pool: AVE"), {{2, 2, 7, 6}});
    f.FillBottoms();
    CheckGradient(f);
  }
  {
    LayerFixture f(Spp("pyramid_height: 1 pool: AVE"), {{2, 3, 4, 5}});
    f.FillBottoms();
    CheckGradient(f);
  }
  {
    LayerFixture f(Spp("pyramid_height: 2 pool: STOCHASTIC") + " phase: TEST", {{1, 2, 4, 4}});
    FillUniform(&f.bottom(0), f.rng(), 0.5f, 2.0f);
    CheckGradient(f);
  }
}

namespace {
std::string ErrorOf(const std::string& param, const std::vector<int>& shape) {
  try {
    LayerFixture f(Spp(param), {shape});
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST(SPP, UserErrors) {
  const std::string unset = ErrorOf("pool: MAX", {1, 1, 4, 4});
  EXPECT_NE(unset.find("layer spp (SPP)"), std::string::npos) << unset;
  EXPECT_NE(unset.find("pyramid_height must be between 1 and 31"), std::string::npos) << unset;
  // Level 2 of a 2-row input: 4 bins need kernel 1 with pad 1.
  const std::string small = ErrorOf("pyramid_height: 3", {1, 1, 2, 8});
  EXPECT_NE(small.find("too small for pyramid_height 3"), std::string::npos) << small;
  // Level 1 of a 5×5 input needs padding, which STOCHASTIC pooling lacks.
  const std::string stochastic = ErrorOf("pyramid_height: 2 pool: STOCHASTIC", {1, 1, 5, 5});
  EXPECT_NE(stochastic.find("STOCHASTIC pooling takes no padding"), std::string::npos) << stochastic;
  EXPECT_NE(ErrorOf("pyramid_height: 2", {1, 4, 4}).find("4-D"), std::string::npos);
}

}  // namespace cortado::test
