// scale_test.cpp — Scale: a learned γ (default ones) with and without a bias (default zeros) by hand,
// axis / num_axes variants (a block, the last axis, everything from an axis, a scalar) against a
// direct loop, γ from a second bottom (its gradient written, the blob's accumulated), running in
// place, gradient checks of every form, and shape errors.
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

TEST(Scale, LearnedScaleAndBiasByHand) {
  LayerFixture f("type: 'Scale' scale_param { bias_term: true }", {{2, 3, 2}});
  ASSERT_EQ(f.layer().blobs().size(), 2u);
  EXPECT_EQ(f.layer().blobs()[0]->shape(), std::vector<int>{3});
  EXPECT_EQ(f.layer().blobs()[1]->shape(), std::vector<int>{3});
  Expect(f.layer().blobs()[0]->data(), {1, 1, 1}, "default γ");
  Expect(f.layer().blobs()[1]->data(), {0, 0, 0}, "default β");
  Set(*f.layer().blobs()[0], {1, 2, 3});
  Set(*f.layer().blobs()[1], {10, 20, 30});
  Set(f.bottom(0), {1, 2, 3, 4, 5, 6, -1, -2, -3, -4, -5, -6});
  f.Forward();
  Expect(f.top(0).data(), {11, 12, 26, 28, 45, 48, 9, 8, 14, 12, 15, 12}, "top");
  Set(*f.top()[0], std::vector<float>(12, 0.0f));  // top data is not read by Backward
  for (int i = 0; i < 12; ++i) f.top(0).diff()[i] = static_cast<float>(i % 2 + 1);  // 1, 2, 1, 2, ...
  f.Backward();
  Expect(f.bottom(0).diff(), {1, 2, 2, 4, 3, 6, 1, 2, 2, 4, 3, 6}, "dx = dy·γ");
  // dγ[c] = Σ dy·x over n and the last axis: c0: 1+4−1−4 = 0, c1: 3+8−3−8 = 0, c2: 5+12−5−12 = 0 —
  // cancels; dβ[c] = Σ dy = 6.
  Expect(f.layer().blobs()[0]->diff(), {0, 0, 0}, "dγ");
  Expect(f.layer().blobs()[1]->diff(), {6, 6, 6}, "dβ");
  // Without the bias: one blob, and dγ on a batch that does not cancel.
  LayerFixture g("type: 'Scale' scale_param { filler { type: 'constant' value: 2 } }", {{1, 2, 2}});
  ASSERT_EQ(g.layer().blobs().size(), 1u);
  Expect(g.layer().blobs()[0]->data(), {2, 2}, "filler");
  Set(g.bottom(0), {1, 2, 3, 4});
  g.Forward();
  Expect(g.top(0).data(), {2, 4, 6, 8}, "top");
  Set(*g.top()[0], {0, 0, 0, 0});
  std::fill(g.top(0).diff(), g.top(0).diff() + 4, 1.0f);
  g.Backward();
  Expect(g.layer().blobs()[0]->diff(), {3, 7}, "dγ");
}

TEST(Scale, AxisVariantsMatchDirectLoop) {
  // Bottom (2, 3, 4): γ over [axis, axis + num_axes) — its shape, and the (outer, dim, inner) split.
  struct Case {
    const char* params;
    std::vector<int> shape;
    int outer, dim, inner;
  };
  const Case cases[] = {
      {"axis: 1", {3}, 2, 3, 4},
      {"axis: 0 num_axes: 2", {2, 3}, 1, 6, 4},
      {"axis: -1", {4}, 6, 4, 1},
      {"axis: 1 num_axes: -1", {3, 4}, 2, 12, 1},
      {"axis: 2 num_axes: 0", {}, 1, 1, 24},  // a scalar: the axis does not matter
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.params);
    LayerFixture f(std::string("type: 'Scale' scale_param { ") + c.params +
                       " bias_term: true filler { type: 'gaussian' } bias_filler { type: 'gaussian' } }",
                   {{2, 3, 4}});
    ASSERT_EQ(f.layer().blobs()[0]->shape(), c.shape);
    ASSERT_EQ(f.layer().blobs()[1]->shape(), c.shape);
    f.FillBottoms();
    f.Forward();
    const float* x = f.bottom(0).data();
    const float* g = f.layer().blobs()[0]->data();
    const float* b = f.layer().blobs()[1]->data();
    for (int o = 0; o < c.outer; ++o)
      for (int d = 0; d < c.dim; ++d)
        for (int i = 0; i < c.inner; ++i) {
          const int k = (o * c.dim + d) * c.inner + i;
          EXPECT_NEAR(f.top(0).data()[k], x[k] * g[d] + b[d], 1e-5) << k;
        }
  }
}

TEST(Scale, SecondBottomIsTheScale) {
  // bottom[1] (3) scales channels of (2, 3, 1); its gradient is written (not accumulated); no blobs.
  LayerFixture f("type: 'Scale'", {{2, 3, 1}, {3}});
  EXPECT_TRUE(f.layer().blobs().empty());
  Set(f.bottom(0), {1, 2, 3, 4, 5, 6});
  Set(f.bottom(1), {2, -1, 0.5f});
  f.Forward();
  Expect(f.top(0).data(), {2, -2, 1.5f, 8, -5, 3}, "top");
  std::fill(f.top(0).diff(), f.top(0).diff() + 6, 1.0f);
  std::fill(f.bottom(1).diff(), f.bottom(1).diff() + 3, 100.0f);  // overwritten, not added to
  f.Backward();
  Expect(f.bottom(0).diff(), {2, -1, 0.5f, 2, -1, 0.5f}, "dx");
  Expect(f.bottom(1).diff(), {5, 7, 9}, "dγ");
  // With a bias: one blob, shaped like bottom[1]; axis 0 with a (2, 3) scale.
  LayerFixture b("type: 'Scale' scale_param { axis: 0 bias_term: true bias_filler { type: 'constant' value: 1 } }",
                 {{2, 3, 2}, {2, 3}});
  ASSERT_EQ(b.layer().blobs().size(), 1u);
  EXPECT_EQ(b.layer().blobs()[0]->shape(), (std::vector<int>{2, 3}));
  for (int i = 0; i < 12; ++i) b.bottom(0).data()[i] = static_cast<float>(i);
  for (int i = 0; i < 6; ++i) b.bottom(1).data()[i] = static_cast<float>(i);
  b.Forward();
  for (int i = 0; i < 12; ++i) EXPECT_FLOAT_EQ(b.top(0).data()[i], i * (i / 2) + 1.0f) << i;
  // A scalar bottom[1] scales everything, whatever the axis.
  LayerFixture s("type: 'Scale' scale_param { axis: 1 }", {{2, 2}, {}});
  Set(s.bottom(0), {1, 2, 3, 4});
  Set(s.bottom(1), {-2});
  s.Forward();
  Expect(s.top(0).data(), {-2, -4, -6, -8}, "scalar");
}

TEST(Scale, ParameterGradientsAccumulate) {
  LayerFixture f("type: 'Scale' scale_param { bias_term: true }", {{1, 2}});
  Set(f.bottom(0), {3, 4});
  f.Forward();
  std::fill(f.top(0).diff(), f.top(0).diff() + 2, 1.0f);
  f.Backward();
  f.layer().Backward(f.top(), {true}, f.bottom());  // a second pass adds to the blobs' diffs
  Expect(f.layer().blobs()[0]->diff(), {6, 8}, "dγ");
  Expect(f.layer().blobs()[1]->diff(), {2, 2}, "dβ");
  Expect(f.bottom(0).diff(), {1, 1}, "dx is written");
}

TEST(Scale, GradientCheck) {
  for (const char* params : {"", "bias_term: true", "axis: 0 num_axes: 2 bias_term: true", "axis: -1",
                             "num_axes: -1", "num_axes: 0 bias_term: true"}) {
    SCOPED_TRACE(params);
    LayerFixture f(std::string("type: 'Scale' scale_param { ") + params +
                       " filler { type: 'gaussian' } bias_filler { type: 'gaussian' } }",
                   {{2, 3, 2, 2}});
    f.FillBottoms();
    CheckGradient(f);
  }
  for (bool bias : {false, true}) {
    SCOPED_TRACE(bias ? "two bottoms, bias" : "two bottoms");
    LayerFixture f(std::string("type: 'Scale' scale_param { bias_term: ") + (bias ? "true" : "false") +
                       " bias_filler { type: 'gaussian' } }",
                   {{2, 3, 2, 2}, {3, 2}});
    f.FillBottoms();
    CheckGradient(f);
  }
}

TEST(Scale, RunsInPlace) {
  // In place the bottom is overwritten by y, so dγ needs the copy of x the layer keeps.
  for (int bottoms : {1, 2}) {
    SCOPED_TRACE(bottoms);
    const std::string text = "name: 's' type: 'Scale' scale_param { bias_term: true filler { type: 'gaussian' } "
                             "bias_filler { type: 'gaussian' } }";
    std::vector<std::vector<int>> shapes = {{2, 3, 2}};
    if (bottoms == 2) shapes.push_back({3});
    LayerFixture out(text, shapes);
    out.FillBottoms();
    out.Forward();
    for (int64_t i = 0; i < out.top(0).count(); ++i) out.top(0).diff()[i] = 0.1f * static_cast<float>(i) - 0.5f;
    out.Backward();

    Context ctx(Device::kCPU, 1701);
    Blob x(std::vector<int>{2, 3, 2}), gamma(std::vector<int>{3});
    BlobVec bottom = {&x};
    if (bottoms == 2) bottom.push_back(&gamma);
    auto layer = LayerRegistry::Create(ParseLayer(text), ctx);
    layer->SetUp(bottom, {&x});
    std::vector<Blob*> blobs = bottom;
    for (auto& p : layer->blobs()) blobs.push_back(p.get());
    for (const auto& s : layer->scratch_buffers()) blobs.push_back(s.blob);
    auto arena = AllocateBlobs(blobs, true);
    for (size_t p = 0; p < layer->blobs().size(); ++p) layer->blobs()[p]->WriteData(out.layer().blobs()[p]->ReadData());
    for (size_t b = 0; b < bottom.size(); ++b) bottom[b]->WriteData(out.bottom(static_cast<int>(b)).ReadData());
    layer->Forward(bottom, {&x});
    for (int64_t i = 0; i < x.count(); ++i) EXPECT_FLOAT_EQ(x.data()[i], out.top(0).data()[i]) << i;
    x.WriteDiff(out.top(0).ReadDiff());
    for (auto& p : layer->blobs()) p->WriteDiff(std::vector<float>(p->count(), 0.0f));
    layer->Backward({&x}, std::vector<bool>(bottom.size(), true), bottom);
    for (int64_t i = 0; i < x.count(); ++i) EXPECT_FLOAT_EQ(x.diff()[i], out.bottom(0).diff()[i]) << i;
    for (size_t p = 0; p < layer->blobs().size(); ++p)
      for (int64_t i = 0; i < layer->blobs()[p]->count(); ++i)
        EXPECT_NEAR(layer->blobs()[p]->diff()[i], out.layer().blobs()[p]->diff()[i], 1e-5) << p << " " << i;
    if (bottoms == 2)
      for (int i = 0; i < 3; ++i) EXPECT_NEAR(gamma.diff()[i], out.bottom(1).diff()[i], 1e-5) << i;
  }
}

TEST(Scale, ShapeErrors) {
  const std::string mismatch = ErrorOf([] { LayerFixture("name: 's1' type: 'Scale'", {{2, 3, 4}, {4}}); });
  EXPECT_NE(mismatch.find("s1"), std::string::npos) << mismatch;
  EXPECT_NE(mismatch.find("does not match"), std::string::npos) << mismatch;
  const std::string too_far =
      ErrorOf([] { LayerFixture("name: 's2' type: 'Scale' scale_param { axis: 2 num_axes: 2 }", {{2, 3, 4}}); });
  EXPECT_NE(too_far.find("num_axes"), std::string::npos) << too_far;
  const std::string negative =
      ErrorOf([] { LayerFixture("type: 'Scale' scale_param { num_axes: -2 }", {{2, 3}}); });
  EXPECT_NE(negative.find("num_axes"), std::string::npos) << negative;
}

}  // namespace cortado::test
