// threshold_test.cpp — Threshold against hand-computed values (x equal to the threshold gives 0), and
// its backward: an Error naming the layer when a bottom gradient is asked for, nothing otherwise.
#include "cortado/error.hpp"
#include "test_util.hpp"

namespace cortado::test {

TEST(Threshold, ForwardMatchesHandComputedValues) {
  {
    LayerFixture f("type: 'Threshold' threshold_param { threshold: 0.5 }", {{5}});
    const float in[] = {0.2f, 0.5f, 0.7f, -1.0f, 9.0f};
    std::copy(in, in + 5, f.bottom(0).data());
    f.Forward();
    const float expected[] = {0.0f, 0.0f, 1.0f, 0.0f, 1.0f};
    for (int i = 0; i < 5; ++i) EXPECT_EQ(f.top(0).data()[i], expected[i]) << in[i];
  }
  {
    LayerFixture f("type: 'Threshold'", {{3}});  // threshold 0
    const float in[] = {-0.1f, 0.0f, 0.1f};
    std::copy(in, in + 3, f.bottom(0).data());
    f.Forward();
    const float expected[] = {0.0f, 0.0f, 1.0f};
    for (int i = 0; i < 3; ++i) EXPECT_EQ(f.top(0).data()[i], expected[i]) << in[i];
  }
}

TEST(Threshold, BackwardIsAnErrorOnlyWhenAGradientIsAskedFor) {
  LayerFixture f("name: 'step' type: 'Threshold'", {{2, 3}});
  f.FillBottoms();
  f.Forward();
  EXPECT_NO_THROW(f.layer().Backward(f.top(), {false}, f.bottom()));
  const std::string message = ErrorOf([&] { f.Backward(); });
  EXPECT_NE(message.find("layer step (Threshold)"), std::string::npos) << message;
  EXPECT_NE(message.find("backward"), std::string::npos) << message;
}

}  // namespace cortado::test
