// input_test.cpp — Input: tops shaped from input_param (per top or shared), data left to the caller.
#include "cortado/error.hpp"
#include "test_util.hpp"

namespace cortado::test {

TEST(Input, OneShapePerTop) {
  LayerFixture f("type: 'Input' input_param { shape { dim: 2 dim: 3 } shape { dim: 4 } }", {}, 2);
  EXPECT_EQ(f.top(0).shape(), (std::vector<int>{2, 3}));
  EXPECT_EQ(f.top(1).shape(), (std::vector<int>{4}));
}

TEST(Input, OneShapeSharedByAllTops) {
  LayerFixture f("type: 'Input' input_param { shape { dim: 1 dim: 2 dim: 5 } }", {}, 3);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(f.top(i).shape(), (std::vector<int>{1, 2, 5}));
}

TEST(Input, ForwardAndBackwardLeaveTheCallersDataAlone) {
  LayerFixture f("type: 'Input' input_param { shape { dim: 3 } }", {});
  const float in[] = {1.5f, -2.0f, 7.0f};
  std::copy(in, in + 3, f.top(0).data());
  f.Forward();
  f.Backward();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(f.top(0).data()[i], in[i]);
}

TEST(Input, WrongNumberOfShapesIsAnError) {
  try {
    LayerFixture f("name: 'in' type: 'Input' input_param { shape { dim: 1 } shape { dim: 2 } }", {}, 3);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("layer in (Input)"), std::string::npos) << e.what();
  }
}

}  // namespace cortado::test
