// prelu_test.cpp — PReLU: slope blobs (per channel, or one shared of shape ()) and their default 0.25,
// hand-computed forward, backward and slope gradients (accumulated, not written), gradient checks
// including the slopes, in-place use (a copy of the input is kept), lr_mult 0, and a bottom without
// a channel axis.
#include "in_place.hpp"

namespace cortado::test {

TEST(PReLU, SlopeBlobsAndTheirDefault) {
  LayerFixture f("type: 'PReLU'", {{2, 3, 4}});
  ASSERT_EQ(f.layer().blobs().size(), 1u);
  EXPECT_EQ(f.layer().blobs()[0]->shape(), std::vector<int>{3});
  EXPECT_EQ(f.layer().blobs()[0]->ReadData(), std::vector<float>(3, 0.25f));
  LayerFixture shared("type: 'PReLU' prelu_param { channel_shared: true }", {{2, 3, 4}});
  EXPECT_EQ(shared.layer().blobs()[0]->shape(), std::vector<int>{});
  EXPECT_EQ(shared.layer().blobs()[0]->ReadData(), std::vector<float>{0.25f});
  LayerFixture filled("type: 'PReLU' prelu_param { filler { type: 'constant' value: 0.1 } }", {{2, 5}});
  EXPECT_EQ(filled.layer().blobs()[0]->ReadData(), std::vector<float>(5, 0.1f));
}

TEST(PReLU, ForwardBackwardAndSlopeGradientsMatchHandComputedValues) {
  // N = 2, C = 2, D = 2; slopes 0.5 and 0.25.
  LayerFixture f("type: 'PReLU'", {{2, 2, 2}});
  f.layer().blobs()[0]->data()[0] = 0.5f;
  f.layer().blobs()[0]->data()[1] = 0.25f;
  const float in[] = {-1.0f, 2.0f, -4.0f, 3.0f, 0.0f, -2.0f, 1.0f, -8.0f};
  std::copy(in, in + 8, f.bottom(0).data());
  f.Forward();
  const float y[] = {-0.5f, 2.0f, -1.0f, 3.0f, 0.0f, -1.0f, 1.0f, -2.0f};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(f.top(0).data()[i], y[i]) << i;
  const float dy[] = {1.0f, 1.0f, 2.0f, 1.0f, 3.0f, 1.0f, 1.0f, 0.5f};
  std::copy(dy, dy + 8, f.top(0).diff());
  f.Backward();
  const float dx[] = {0.5f, 1.0f, 0.5f, 1.0f, 1.5f, 0.5f, 1.0f, 0.125f};  // x ≤ 0: dy · slope
  for (int i = 0; i < 8; ++i) EXPECT_EQ(f.bottom(0).diff()[i], dx[i]) << i;
  // Channel 0 holds elements 0, 1, 4, 5: Σ dy·x over x ≤ 0 = −1 + 0 − 2 = −3.
  // Channel 1 holds elements 2, 3, 6, 7: −8 − 4 = −12.
  EXPECT_EQ(f.layer().blobs()[0]->ReadDiff(), (std::vector<float>{-3.0f, -12.0f}));
  // A second Backward adds to the slope gradient and writes the bottom gradient again.
  f.layer().Backward(f.top(), {true}, f.bottom());
  EXPECT_EQ(f.layer().blobs()[0]->ReadDiff(), (std::vector<float>{-6.0f, -24.0f}));
  for (int i = 0; i < 8; ++i) EXPECT_EQ(f.bottom(0).diff()[i], dx[i]) << i;
}

TEST(PReLU, SharedSlopeMatchesHandComputedValues) {
  LayerFixture f("type: 'PReLU' prelu_param { channel_shared: true }", {{1, 2, 2}});
  f.layer().blobs()[0]->data()[0] = 0.5f;
  const float in[] = {-1.0f, 2.0f, -4.0f, 3.0f};
  std::copy(in, in + 4, f.bottom(0).data());
  f.Forward();
  EXPECT_EQ(f.top(0).ReadData(), (std::vector<float>{-0.5f, 2.0f, -2.0f, 3.0f}));
  for (int i = 0; i < 4; ++i) f.top(0).diff()[i] = 1.0f;
  f.Backward();
  EXPECT_EQ(f.bottom(0).ReadDiff(), (std::vector<float>{0.5f, 1.0f, 0.5f, 1.0f}));
  EXPECT_EQ(f.layer().blobs()[0]->ReadDiff(), std::vector<float>{-5.0f});
}

TEST(PReLU, GradientCheck) {
  for (const char* text : {"type: 'PReLU' prelu_param { filler { type: 'uniform' min: -0.5 max: 0.8 } }",
                           "type: 'PReLU' prelu_param { channel_shared: true filler { type: 'gaussian' } }"}) {
    SCOPED_TRACE(text);
    LayerFixture f(text, {{2, 3, 4, 5}});
    f.FillBottoms();
    GradientCheckOptions o;
    o.kink_range = 0.02f;
    CheckGradient(f, o);
  }
  LayerFixture two_axes("type: 'PReLU' prelu_param { filler { type: 'gaussian' } }", {{4, 3}});
  two_axes.FillBottoms();
  GradientCheckOptions o;
  o.kink_range = 0.02f;
  CheckGradient(two_axes, o);
}

TEST(PReLU, InPlaceMatchesOutOfPlace) {
  EXPECT_EQ(InPlaceScratchCount("type: 'PReLU'", {3, 4}), 1u);
  ExpectInPlaceMatchesOutOfPlace("type: 'PReLU' prelu_param { filler { type: 'gaussian' } }", {3, 4, 5}, -2, 2);
  ExpectInPlaceMatchesOutOfPlace("type: 'PReLU' prelu_param { channel_shared: true filler { value: 0.3 } }",
                                 {3, 4, 5}, -2, 2);
}

TEST(PReLU, FrozenSlopeGetsNoGradient) {
  LayerFixture f("type: 'PReLU'", {{2, 3, 4}});
  f.layer().set_param_propagate_down(0, false);
  f.FillBottoms();
  f.Forward();
  for (int64_t i = 0; i < f.top(0).count(); ++i) f.top(0).diff()[i] = 1.0f;
  f.Backward();
  EXPECT_EQ(f.layer().blobs()[0]->ReadDiff(), std::vector<float>(3, 0.0f));
  for (int64_t i = 0; i < f.bottom(0).count(); ++i)
    EXPECT_EQ(f.bottom(0).diff()[i], f.bottom(0).data()[i] > 0 ? 1.0f : 0.25f);
}

TEST(PReLU, BottomWithoutChannelAxisIsAnError) {
  const std::string message = ErrorOf([] { LayerFixture f("name: 'p' type: 'PReLU'", {{6}}); });
  EXPECT_NE(message.find("layer p (PReLU)"), std::string::npos) << message;
  EXPECT_NE(message.find("at least 2 axes"), std::string::npos) << message;
}

}  // namespace cortado::test
