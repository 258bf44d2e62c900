// bias_test.cpp — Bias: a learned β (default zeros) by hand, axis / num_axes variants against a
// direct loop, β from a second bottom (its gradient written, the blob's accumulated), in place,
// gradient checks, and shape errors.
#include "cortado/error.hpp"
#include "cortado/layer_registry.hpp"
#include "cortado/memory.hpp"
#include "test_util.hpp"

namespace cortado::test {

namespace {

void Set(Blob& blob, const std::vector<float>& values) {
  ASSERT_EQ(blob.count(), static_cast<int64_t>(values.size()));
  std::copy(values.begin(), values.end(), blob.data());
}

void Expect(const float* values, const std::vector<float>& expected, const char* what) {
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_FLOAT_EQ(values[i], expected[i]) << what << " " << i;
}

}  // namespace

TEST(Bias, LearnedBiasByHand) {
  LayerFixture f("type: 'Bias'", {{2, 2, 2}});
  ASSERT_EQ(f.layer().blobs().size(), 1u);
  EXPECT_EQ(f.layer().blobs()[0]->shape(), std::vector<int>{2});
  Expect(f.layer().blobs()[0]->data(), {0, 0}, "default β");
  Set(*f.layer().blobs()[0], {10, -10});
  Set(f.bottom(0), {1, 2, 3, 4, 5, 6, 7, 8});
  f.Forward();
  Expect(f.top(0).data(), {11, 12, -7, -6, 15, 16, -3, -2}, "top");
  for (int i = 0; i < 8; ++i) f.top(0).diff()[i] = static_cast<float>(i);
  f.Backward();
  Expect(f.bottom(0).diff(), {0, 1, 2, 3, 4, 5, 6, 7}, "dx = dy");
  Expect(f.layer().blobs()[0]->diff(), {0 + 1 + 4 + 5, 2 + 3 + 6 + 7}, "dβ");
  f.layer().Backward(f.top(), {true}, f.bottom());  // accumulates into the blob's diff
  Expect(f.layer().blobs()[0]->diff(), {20, 36}, "dβ twice");
}

TEST(Bias, AxisVariantsMatchDirectLoop) {
  struct Case {
    const char* params;
    std::vector<int> shape;
    int outer, dim, inner;
  };
  const Case cases[] = {
      {"axis: 0 num_axes: 2", {2, 3}, 1, 6, 4},
      {"axis: -1", {4}, 6, 4, 1},
      {"axis: 1 num_axes: -1", {3, 4}, 2, 12, 1},
      {"num_axes: 0", {}, 1, 1, 24},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.params);
    LayerFixture f(std::string("type: 'Bias' bias_param { ") + c.params + " filler { type: 'gaussian' } }",
                   {{2, 3, 4}});
    ASSERT_EQ(f.layer().blobs()[0]->shape(), c.shape);
    f.FillBottoms();
    f.Forward();
    const float* x = f.bottom(0).data();
    const float* b = f.layer().blobs()[0]->data();
    for (int o = 0; o < c.outer; ++o)
      for (int d = 0; d < c.dim; ++d)
        for (int i = 0; i < c.inner; ++i) {
          const int k = (o * c.dim + d) * c.inner + i;
          EXPECT_FLOAT_EQ(f.top(0).data()[k], x[k] + b[d]) << k;
        }
  }
}

TEST(Bias, SecondBottomIsTheBias) {
  LayerFixture f("type: 'Bias'", {{2, 3}, {3}});
  EXPECT_TRUE(f.layer().blobs().empty());
  Set(f.bottom(0), {1, 2, 3, 4, 5, 6});
  Set(f.bottom(1), {1, 0, -1});
  f.Forward();
  Expect(f.top(0).data(), {2, 2, 2, 5, 5, 5}, "top");
  Set(*f.top()[0], {0, 0, 0, 0, 0, 0});
  for (int i = 0; i < 6; ++i) f.top(0).diff()[i] = static_cast<float>(i + 1);
  std::fill(f.bottom(1).diff(), f.bottom(1).diff() + 3, 100.0f);  // overwritten, not added to
  f.Backward();
  Expect(f.bottom(0).diff(), {1, 2, 3, 4, 5, 6}, "dx");
  Expect(f.bottom(1).diff(), {5, 7, 9}, "dβ");
}

TEST(Bias, GradientCheck) {
  for (const char* params : {"", "axis: 0 num_axes: 2", "num_axes: -1", "num_axes: 0"}) {
    SCOPED_TRACE(params);
    LayerFixture f(std::string("type: 'Bias' bias_param { ") + params + " filler { type: 'gaussian' } }",
                   {{2, 3, 2, 2}});
    f.FillBottoms();
    CheckGradient(f);
  }
  LayerFixture f("type: 'Bias'", {{2, 3, 2, 2}, {3, 2}});
  f.FillBottoms();
  CheckGradient(f);
}

TEST(Bias, RunsInPlace) {
  Context ctx;
  Blob x(std::vector<int>{2, 3});
  auto layer = LayerRegistry::Create(ParseLayer("name: 'b' type: 'Bias' bias_param { filler { type: 'constant' value: 2 } }"),
                                     ctx);
  layer->SetUp({&x}, {&x});
  auto arena = AllocateBlobs({&x, layer->blobs()[0].get()}, true);
  layer->InitParams();
  x.WriteData({1, 2, 3, 4, 5, 6});
  layer->Forward({&x}, {&x});
  Expect(x.data(), {3, 4, 5, 6, 7, 8}, "top");
  x.WriteDiff({1, 1, 1, 2, 2, 2});
  layer->blobs()[0]->WriteDiff({0, 0, 0});
  layer->Backward({&x}, {true}, {&x});
  Expect(x.diff(), {1, 1, 1, 2, 2, 2}, "dx");
  Expect(layer->blobs()[0]->diff(), {3, 3, 3}, "dβ");
}

TEST(Bias, ShapeErrors) {
  const std::string mismatch = ErrorOf([] { LayerFixture("name: 'b1' type: 'Bias'", {{2, 3, 4}, {4}}); });
  EXPECT_NE(mismatch.find("b1"), std::string::npos) << mismatch;
  EXPECT_NE(mismatch.find("does not match"), std::string::npos) << mismatch;
  const std::string too_far =
      ErrorOf([] { LayerFixture("name: 'b2' type: 'Bias' bias_param { axis: 1 num_axes: 3 }", {{2, 3, 4}}); });
  EXPECT_NE(too_far.find("num_axes"), std::string::npos) << too_far;
}

}  // namespace cortado::test
