// parameter_test.cpp — Parameter: the blob's shape from parameter_param, zero start (Caffe has no
// filler), the top as a copy of the blob, gradients accumulated into the blob (and not when its
// gradient is off), a gradient check and the blob-count and shape errors.
#include "cortado/error.hpp"
#include "test_util.hpp"

namespace cortado::test {

TEST(Parameter, TopIsTheBlobAndBackwardAccumulates) {
  LayerFixture f("type: 'Parameter' parameter_param { shape { dim: 2 dim: 3 } }", {});
  ASSERT_EQ(f.layer().blobs().size(), 1u);
  Blob& p = *f.layer().blobs()[0];
  ASSERT_EQ(p.shape(), (std::vector<int>{2, 3}));
  ASSERT_EQ(f.top(0).shape(), (std::vector<int>{2, 3}));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(p.data()[i], 0.0f);  // no filler: zeros, as in Caffe
  f.Forward();
  for (int i = 0; i < 6; ++i) EXPECT_EQ(f.top(0).data()[i], 0.0f);
  for (int i = 0; i < 6; ++i) p.data()[i] = 0.5f * i - 1;
  f.Forward();
  for (int i = 0; i < 6; ++i) EXPECT_EQ(f.top(0).data()[i], 0.5f * i - 1);

  for (int i = 0; i < 6; ++i) f.top(0).diff()[i] = static_cast<float>(i + 1);
  f.Backward();  // zeroes the blob's diff first
  for (int i = 0; i < 6; ++i) EXPECT_EQ(p.diff()[i], i + 1.0f);
  f.layer().Backward(f.top(), {}, f.bottom());
  for (int i = 0; i < 6; ++i) EXPECT_EQ(p.diff()[i], 2 * (i + 1.0f));
  f.layer().set_param_propagate_down(0, false);  // lr_mult: 0
  f.layer().Backward(f.top(), {}, f.bottom());
  for (int i = 0; i < 6; ++i) EXPECT_EQ(p.diff()[i], 2 * (i + 1.0f));
}

TEST(Parameter, GradientCheck) {
  LayerFixture f("type: 'Parameter' parameter_param { shape { dim: 3 dim: 1 dim: 2 } }", {});
  FillGaussian(f.layer().blobs()[0].get(), f.rng());
  CheckGradient(f);
}

TEST(Parameter, ErrorsNameTheLayer) {
  EXPECT_NE(ErrorOf([] { LayerFixture("name: 'p' type: 'Parameter' parameter_param { shape { dim: 2 } }", {{2}}); })
                .find("layer p (Parameter): takes exactly 0 bottom"),
            std::string::npos);
  EXPECT_NE(ErrorOf([] { LayerFixture("name: 'p' type: 'Parameter' parameter_param { shape { dim: -2 } }", {}); })
                .find("layer p (Parameter): parameter_param.shape has dimension -2"),
            std::string::npos);
}

}  // namespace cortado::test
