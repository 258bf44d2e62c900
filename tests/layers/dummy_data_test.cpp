// dummy_data_test.cpp — DummyData: shapes (new and legacy fields), constant and random fillers,
// constants filled once and random fillers drawn again on every Forward (refill: false draws them once
// too), the tops a net keeps between passes, which layers a CUDA graph may capture, and parameter
// errors.
#include "cortado/error.hpp"
#include "cortado/filler.hpp"
#include "cortado/net.hpp"
#include "test_util.hpp"

namespace cortado::test {

TEST(DummyData, DefaultFillerIsConstantZero) {
  LayerFixture f("type: 'DummyData' dummy_data_param { shape { dim: 2 dim: 3 } }", {});
  EXPECT_EQ(f.top(0).shape(), (std::vector<int>{2, 3}));
  std::fill(f.top(0).data(), f.top(0).data() + 6, 9.0f);
  f.Forward();
  for (int i = 0; i < 6; ++i) EXPECT_EQ(f.top(0).data()[i], 0.0f);
}

TEST(DummyData, OneFillerAndShapePerTop) {
  LayerFixture f(R"(type: 'DummyData' dummy_data_param {
                      data_filler { type: 'constant' value: 2.5 }
                      data_filler { type: 'constant' value: -1 }
                      shape { dim: 4 } shape { dim: 1 dim: 2 } })",
                 {}, 2);
  ASSERT_EQ(f.top(0).shape(), (std::vector<int>{4}));
  ASSERT_EQ(f.top(1).shape(), (std::vector<int>{1, 2}));
  f.Forward();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(f.top(0).data()[i], 2.5f);
  for (int i = 0; i < 2; ++i) EXPECT_EQ(f.top(1).data()[i], -1.0f);
}

TEST(DummyData, SharedFillerAndLegacyShape) {
  LayerFixture f(R"(type: 'DummyData' dummy_data_param {
                      data_filler { type: 'constant' value: 7 }
                      num: 2 channels: 3 height: 1 width: 4 num: 1 channels: 1 height: 2 width: 2 })",
                 {}, 2);
  EXPECT_EQ(f.top(0).shape(), (std::vector<int>{2, 3, 1, 4}));
  EXPECT_EQ(f.top(1).shape(), (std::vector<int>{1, 1, 2, 2}));
  f.Forward();
  for (int t = 0; t < 2; ++t)
    for (int64_t i = 0; i < f.top(t).count(); ++i) EXPECT_EQ(f.top(t).data()[i], 7.0f);
}

TEST(DummyData, RandomFillerRefillsEveryForward) {
  LayerFixture f("type: 'DummyData' dummy_data_param { data_filler { type: 'uniform' min: 2 max: 3 } "
                 "shape { dim: 50 } }",
                 {});
  f.Forward();
  const std::vector<float> first(f.top(0).data(), f.top(0).data() + 50);
  f.Forward();
  int changed = 0;
  for (int i = 0; i < 50; ++i) {
    EXPECT_GE(f.top(0).data()[i], 2.0f);
    EXPECT_LE(f.top(0).data()[i], 3.0f);
    changed += f.top(0).data()[i] != first[i];
  }
  EXPECT_GT(changed, 40);
}

// As in Caffe, a constant top is filled at the first Forward only: what is written there afterwards
// stays (nothing refills it), and the context's generator is not drawn from.
TEST(DummyData, ConstantTopsAreFilledOnceAndKeepTheirValues) {
  LayerFixture f(R"(type: 'DummyData' dummy_data_param {
                      data_filler { type: 'constant' value: 2.5 } shape { dim: 2 dim: 3 } shape { dim: 4 } })",
                 {}, 2);
  EXPECT_TRUE(f.layer().IsCapturable()) << "nothing is drawn on the host after the first pass";
  f.Forward();
  for (int t = 0; t < 2; ++t)
    for (int64_t i = 0; i < f.top(t).count(); ++i) EXPECT_EQ(f.top(t).data()[i], 2.5f);
  std::fill(f.top(0).data(), f.top(0).data() + 6, 9.0f);
  for (int pass = 0; pass < 2; ++pass) {
    f.Forward();
    for (int i = 0; i < 6; ++i) EXPECT_EQ(f.top(0).data()[i], 9.0f) << "pass " << pass;
    for (int i = 0; i < 4; ++i) EXPECT_EQ(f.top(1).data()[i], 2.5f) << "pass " << pass;
  }
  Context fresh(Device::kCPU, 1701);
  EXPECT_EQ(f.rng()(), fresh.rng()()) << "a constant filler drew from the generator";
}

// The default (refill: true): a Gaussian top gets the filler's next draws on every pass, exactly as
// FillBlob gives them from the same generator.
TEST(DummyData, GaussianTopsGetTheFillersDrawsOnEveryPass) {
  const std::string text = "type: 'DummyData' dummy_data_param { data_filler { type: 'gaussian' mean: 1 std: 2 } "
                           "shape { dim: 3 dim: 4 } }";
  LayerFixture f(text, {});
  EXPECT_FALSE(f.layer().IsCapturable()) << "its values are drawn on the host every pass";
  Context reference(Device::kCPU, 1701);
  const FillerParameter filler = ParseLayer(text).dummy_data_param().data_filler(0);
  std::vector<float> previous;
  for (int pass = 0; pass < 3; ++pass) {
    f.Forward();
    std::vector<float> expected(12);
    Blob blob(std::vector<int>{3, 4});
    blob.Bind(Device::kCPU, expected.data(), nullptr, 12);
    FillBlob(filler, &blob, reference.rng());
    const std::vector<float> got(f.top(0).data(), f.top(0).data() + 12);
    EXPECT_EQ(got, expected) << "pass " << pass;
    EXPECT_NE(got, previous) << "pass " << pass;
    previous = got;
  }
}

TEST(DummyData, RefillFalseKeepsTheFirstPassRandomValues) {
  const std::string fillers = "data_filler { type: 'gaussian' } data_filler { type: 'uniform' min: -1 max: 1 } "
                              "shape { dim: 20 } shape { dim: 2 dim: 5 } }";
  LayerFixture fixed("type: 'DummyData' dummy_data_param { refill: false " + fillers, {}, 2);
  LayerFixture drawn("type: 'DummyData' dummy_data_param { refill: true " + fillers, {}, 2);
  EXPECT_TRUE(fixed.layer().IsCapturable());
  EXPECT_FALSE(drawn.layer().IsCapturable());
  auto values = [](LayerFixture& f, int t) { return f.top(t).ReadData(); };
  fixed.Forward();
  drawn.Forward();
  const std::vector<std::vector<float>> first = {values(fixed, 0), values(fixed, 1)};
  for (int t = 0; t < 2; ++t) EXPECT_EQ(values(drawn, t), first[t]) << "the first pass draws the same values";
  for (int pass = 1; pass < 3; ++pass) {
    fixed.Forward();
    drawn.Forward();
    for (int t = 0; t < 2; ++t) {
      EXPECT_EQ(values(fixed, t), first[t]) << "refill: false, pass " << pass << ", top " << t;
      EXPECT_NE(values(drawn, t), first[t]) << "refill: true, pass " << pass << ", top " << t;
    }
  }
}

// A data layer's tops have memory of their own in a net's plan: with memory reuse on, the constant
// input filled at the first pass is still there for every later pass, and the outputs never change.
TEST(DummyData, ANetKeepsItsConstantTopsBetweenPasses) {
  NetParameter param = ParseNet(R"(
layer { name: "in" type: "DummyData" top: "x"
        dummy_data_param { data_filler { type: "constant" value: 0.5 } shape { dim: 4 dim: 6 } } }
layer { name: "ip1" type: "InnerProduct" bottom: "x" top: "a"
        inner_product_param { num_output: 6 weight_filler { type: "gaussian" std: 0.5 } } }
layer { name: "t1" type: "TanH" bottom: "a" top: "b" }
layer { name: "ip2" type: "InnerProduct" bottom: "b" top: "c"
        inner_product_param { num_output: 6 weight_filler { type: "gaussian" std: 0.5 } } }
layer { name: "t2" type: "TanH" bottom: "c" top: "d" }
layer { name: "ip3" type: "InnerProduct" bottom: "d" top: "e"
        inner_product_param { num_output: 6 weight_filler { type: "gaussian" std: 0.5 } } }
)");
  param.mutable_state()->set_phase(TEST);
  std::vector<std::vector<float>> outputs;
  for (const bool reuse : {false, true}) {
    param.set_memory_reuse(reuse);
    Context ctx(Device::kCPU, 3);
    Net net(param, ctx, "dummy.prototxt");
    net.AllocateOwnArena();
    for (int pass = 0; pass < 3; ++pass) {
      net.Forward();
      EXPECT_EQ(net.blob_by_name("x")->ReadData(), std::vector<float>(24, 0.5f))
          << "reuse " << reuse << ", pass " << pass;
      outputs.push_back(net.blob_by_name("e")->ReadData());
    }
  }
  for (size_t k = 1; k < outputs.size(); ++k) EXPECT_EQ(outputs[k], outputs[0]) << "run " << k;
}

namespace {
std::string SetUpError(const std::string& text, int tops) {
  try {
    LayerFixture f(text, {}, tops);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(DummyData, BadParametersAreErrors) {
  const std::string filler_count = SetUpError(
      "name: 'd' type: 'DummyData' dummy_data_param { data_filler {} data_filler {} shape { dim: 1 } }", 3);
  EXPECT_NE(filler_count.find("layer d (DummyData)"), std::string::npos) << filler_count;
  EXPECT_NE(filler_count.find("data_filler"), std::string::npos) << filler_count;
  EXPECT_NE(SetUpError("type: 'DummyData' dummy_data_param { shape { dim: 1 } num: 1 channels: 1 "
                       "height: 1 width: 1 }", 1), "");
  EXPECT_NE(SetUpError("type: 'DummyData' dummy_data_param { shape { dim: 1 } shape { dim: 2 } }", 3), "");
  EXPECT_NE(SetUpError("type: 'DummyData' dummy_data_param { num: 1 channels: 1 height: 1 }", 1), "");
  EXPECT_NE(SetUpError("type: 'DummyData'", 1), "");
}

}  // namespace cortado::test
