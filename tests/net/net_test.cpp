// net_test.cpp — building nets: state rules, Split insertion, in-place tops, shared parameters,
// weighted losses, backward-need analysis, and a whole-net gradient check of all of them together.
#include <cmath>

#include "cortado/error.hpp"
#include "cortado/io.hpp"
#include "cortado/math.hpp"
#include "cortado/net.hpp"
#include "test_util.hpp"

namespace cortado::test {

namespace {

// x (4×3) feeds two InnerProduct branches that share weights "w"; one branch goes through an
// in-place ReLU; each branch has its own Euclidean loss against y, weighted 0.5 and 2.
const char* kSharedNet = R"(
name: "shared"
layer { name: "x" type: "Input" top: "x" top: "y" input_param { shape { dim: 4 dim: 3 } shape { dim: 4 dim: 2 } } }
layer { name: "ip_a" type: "InnerProduct" bottom: "x" top: "a"
        param { name: "w" } param { name: "b" }
        inner_product_param { num_output: 2 weight_filler { type: "gaussian" std: 0.5 } bias_filler { type: "gaussian" std: 0.5 } } }
layer { name: "relu_a" type: "ReLU" bottom: "a" top: "a" }
layer { name: "ip_b" type: "InnerProduct" bottom: "x" top: "b"
        param { name: "w" } param { name: "b" }
        inner_product_param { num_output: 2 } }
layer { name: "loss_a" type: "EuclideanLoss" bottom: "a" bottom: "y" top: "loss_a" loss_weight: 0.5 }
layer { name: "loss_b" type: "EuclideanLoss" bottom: "b" bottom: "y" top: "loss_b" loss_weight: 2 }
)";

std::unique_ptr<Net> BuildShared(Context& ctx) {
  NetParameter param = ParseNet(kSharedNet);
  param.mutable_state()->set_phase(TRAIN);
  auto net = std::make_unique<Net>(param, ctx, "shared.prototxt");
  net->AllocateOwnArena();
  FillGaussian(net->blob_by_name("x"), ctx.rng());
  FillGaussian(net->blob_by_name("y"), ctx.rng());
  return net;
}

}  // namespace

TEST(Net, StateRulesSelectLayers) {
  const char* text = R"(
layer { name: "in" type: "Input" top: "x" input_param { shape { dim: 1 dim: 2 } } }
layer { name: "train_only" type: "ReLU" bottom: "x" top: "t" include { phase: TRAIN } }
layer { name: "test_only" type: "ReLU" bottom: "x" top: "u" include { phase: TEST } }
layer { name: "staged" type: "ReLU" bottom: "x" top: "s" include { stage: "deploy" } }
layer { name: "not_staged" type: "ReLU" bottom: "x" top: "n" exclude { stage: "deploy" } }
layer { name: "level2" type: "ReLU" bottom: "x" top: "l" include { min_level: 2 } }
)";
  Context ctx;
  NetParameter param = ParseNet(text);
  param.mutable_state()->set_phase(TEST);
  param.mutable_state()->add_stage("deploy");
  Net net(param, ctx);
  EXPECT_FALSE(net.has_layer("train_only"));
  EXPECT_TRUE(net.has_layer("test_only"));
  EXPECT_TRUE(net.has_layer("staged"));
  EXPECT_FALSE(net.has_layer("not_staged"));
  EXPECT_FALSE(net.has_layer("level2"));
  param.mutable_state()->set_level(2);
  param.mutable_state()->clear_stage();
  param.mutable_state()->set_phase(TRAIN);
  Net net2(param, ctx);
  EXPECT_TRUE(net2.has_layer("train_only"));
  EXPECT_FALSE(net2.has_layer("staged"));
  EXPECT_TRUE(net2.has_layer("not_staged"));
  EXPECT_TRUE(net2.has_layer("level2"));
}

TEST(Net, SplitsInPlaceAndSharedParameters) {
  Context ctx(Device::kCPU, 7);
  auto net = BuildShared(ctx);
  // x and y each feed two layers: two Split layers, named as Caffe names them.
  EXPECT_TRUE(net->has_layer("x_x_0_split"));
  EXPECT_TRUE(net->has_layer("y_x_1_split"));
  // The in-place ReLU reads and writes the same blob.
  const Layer* relu = net->layer_by_name("relu_a");
  (void)relu;
  const auto& names = net->layer_names();
  const int relu_id = static_cast<int>(std::find(names.begin(), names.end(), "relu_a") - names.begin());
  EXPECT_EQ(net->bottom_vecs()[relu_id][0], net->top_vecs()[relu_id][0]);
  // Shared "w" and "b": four parameter blobs, two learnable, one memory.
  EXPECT_EQ(net->params().size(), 4u);
  EXPECT_EQ(net->learnable_params().size(), 2u);
  EXPECT_EQ(net->param_count(), 2 * 3 + 2);
  EXPECT_EQ(net->layer_by_name("ip_a")->blobs()[0]->data(), net->layer_by_name("ip_b")->blobs()[0]->data());
  // Outputs: the two losses.
  ASSERT_EQ(net->output_blobs().size(), 2u);
}

TEST(Net, WeightedLossesSumAsHandComputed) {
  Context ctx(Device::kCPU, 7);
  auto net = BuildShared(ctx);
  const float loss = net->Forward();
  // Recompute both losses by hand from the shared weights.
  const float* w = net->learnable_params()[0]->data();
  const float* b = net->learnable_params()[1]->data();
  const float* x = net->blob_by_name("x")->data();
  const float* y = net->blob_by_name("y")->data();
  double la = 0, lb = 0;
  for (int n = 0; n < 4; ++n)
    for (int o = 0; o < 2; ++o) {
      double z = b[o];
      for (int k = 0; k < 3; ++k) z += w[o * 3 + k] * x[n * 3 + k];
      const double a = std::max(z, 0.0);
      la += (a - y[n * 2 + o]) * (a - y[n * 2 + o]);
      lb += (z - y[n * 2 + o]) * (z - y[n * 2 + o]);
    }
  la /= 2 * 4;
  lb /= 2 * 4;
  EXPECT_NEAR(net->blob_by_name("loss_a")->data()[0], la, 1e-5);
  EXPECT_NEAR(net->blob_by_name("loss_b")->data()[0], lb, 1e-5);
  EXPECT_NEAR(loss, 0.5 * la + 2 * lb, 1e-5);
}

TEST(Net, WholeNetGradientMatchesFiniteDifferences) {
  Context ctx(Device::kCPU, 11);
  auto net = BuildShared(ctx);
  net->ClearParamDiffs();
  net->Forward();
  net->Backward();
  std::vector<float> analytic(net->param_diff(), net->param_diff() + net->param_count());
  const float step = 1e-3f;
  for (int64_t i = 0; i < net->param_count(); ++i) {
    float* p = net->param_data() + i;
    const float saved = *p;
    *p = saved + step;
    const double plus = net->Forward();
    *p = saved - step;
    const double minus = net->Forward();
    *p = saved;
    const double numeric = (plus - minus) / (2 * step);
    EXPECT_NEAR(analytic[i], numeric, 2e-3 * std::max(1.0, std::fabs(numeric))) << "param element " << i;
  }
}

TEST(Net, BackwardNeedFollowsLossesLrMultAndPropagateDown) {
  const char* text = R"(
layer { name: "in" type: "Input" top: "x" top: "y" input_param { shape { dim: 2 dim: 3 } shape { dim: 2 dim: 2 } } }
layer { name: "frozen" type: "InnerProduct" bottom: "x" top: "h" param { lr_mult: 0 } param { lr_mult: 0 }
        inner_product_param { num_output: 2 } }
layer { name: "ip" type: "InnerProduct" bottom: "h" top: "z" inner_product_param { num_output: 2 } }
layer { name: "dangling" type: "InnerProduct" bottom: "h" top: "unused" inner_product_param { num_output: 2 } }
layer { name: "loss" type: "EuclideanLoss" bottom: "z" bottom: "y" top: "loss" propagate_down: true propagate_down: false }
)";
  Context ctx;
  NetParameter param = ParseNet(text);
  param.mutable_state()->set_phase(TRAIN);
  Net net(param, ctx);
  const auto& names = net.layer_names();
  auto need = [&](const std::string& name) {
    return net.layer_need_backward()[std::find(names.begin(), names.end(), name) - names.begin()];
  };
  EXPECT_FALSE(need("frozen"));    // lr_mult 0 and its input needs no gradient
  EXPECT_TRUE(need("ip"));
  EXPECT_FALSE(need("dangling"));  // reaches no loss
  EXPECT_TRUE(need("loss"));
  const int loss_id = static_cast<int>(std::find(names.begin(), names.end(), "loss") - names.begin());
  EXPECT_TRUE(net.bottom_need_backward()[loss_id][0]);
  EXPECT_FALSE(net.bottom_need_backward()[loss_id][1]);
}

TEST(Net, ForceBackwardReachesInputs) {
  const char* text = R"(
force_backward: true
layer { name: "in" type: "Input" top: "x" input_param { shape { dim: 2 dim: 3 } } }
layer { name: "relu" type: "ReLU" bottom: "x" top: "r" }
)";
  Context ctx;
  NetParameter param = ParseNet(text);
  param.mutable_state()->set_phase(TRAIN);
  Net net(param, ctx);
  EXPECT_TRUE(net.layer_need_backward()[1]);
  EXPECT_TRUE(net.bottom_need_backward()[1][0]);
}

// Filter keeps the selected rows; the layers after it take the new row count on every pass, as
// Caffe reshapes each layer before its forward, and go back to more rows when more are selected.
TEST(Net, LayersAfterFilterFollowItsRowCountEachPass) {
  Context ctx(Device::kCPU, 1);
  Net net(ParseNet(R"(
layer { name: "in" type: "Input" top: "x" top: "keep" input_param { shape { dim: 4 dim: 3 } shape { dim: 4 } } }
layer { name: "filter" type: "Filter" bottom: "x" bottom: "keep" top: "kept" }
layer { name: "ip" type: "InnerProduct" bottom: "kept" top: "y"
        inner_product_param { num_output: 2 weight_filler { type: "gaussian" } bias_filler { type: "constant" value: 0.5 } } }
)"),
          ctx);
  net.AllocateOwnArena();
  Blob& x = *net.blob_by_name("x");
  Blob& keep = *net.blob_by_name("keep");
  for (int i = 0; i < 12; ++i) x.data()[i] = 0.25f * i - 1.0f;
  const float* w = net.layer_by_name("ip")->blobs()[0]->data();
  for (const std::vector<float>& selector : {std::vector<float>{1, 0, 1, 0}, std::vector<float>{0, 1, 1, 1}}) {
    std::copy(selector.begin(), selector.end(), keep.data());
    net.Forward();
    std::vector<int> rows;
    for (int i = 0; i < 4; ++i)
      if (selector[i] != 0) rows.push_back(i);
    const Blob& y = *net.blob_by_name("y");
    ASSERT_EQ(y.shape(), (std::vector<int>{static_cast<int>(rows.size()), 2}));
    for (size_t r = 0; r < rows.size(); ++r)
      for (int o = 0; o < 2; ++o) {
        float want = 0.5f;
        for (int k = 0; k < 3; ++k) want += w[o * 3 + k] * x.data()[rows[r] * 3 + k];
        EXPECT_NEAR(y.data()[r * 2 + o], want, 1e-5f) << "row " << r << " output " << o;
      }
  }
}

TEST(Net, UnknownBottomNamesTheLayer) {
  Context ctx;
  NetParameter param = ParseNet("layer { name: 'r' type: 'ReLU' bottom: 'nothing' top: 'r' }");
  try {
    Net net(param, ctx, "bad.prototxt");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("layer r"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("nothing"), std::string::npos) << e.what();
  }
}

TEST(Net, TopProducedTwiceIsAnError) {
  Context ctx;
  NetParameter param = ParseNet(R"(
layer { name: "in" type: "Input" top: "x" input_param { shape { dim: 1 } } }
layer { name: "a" type: "ReLU" bottom: "x" top: "y" }
layer { name: "b" type: "ReLU" bottom: "x" top: "y" })");
  EXPECT_THROW(Net(param, ctx), Error);
}

TEST(Net, UnknownTypeListsKnownTypesAndSuggests) {
  Context ctx;
  NetParameter param = ParseNet("layer { name: 'c' type: 'Convolutoin' }");
  try {
    Net net(param, ctx);
    FAIL();
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("unknown layer type Convolutoin"), std::string::npos) << what;
    EXPECT_NE(what.find("did you mean Convolution?"), std::string::npos) << what;
    EXPECT_NE(what.find("ReLU"), std::string::npos) << what;
  }
}

TEST(Net, CopyTrainedLayersByNameAndShapeMismatch) {
  Context ctx(Device::kCPU, 3);
  auto net = BuildShared(ctx);
  NetParameter saved;
  net->ToProto(&saved);
  Context ctx2(Device::kCPU, 99);
  auto other = BuildShared(ctx2);
  EXPECT_NE(other->param_data()[0], net->param_data()[0]);
  other->CopyTrainedLayersFrom(saved);
  for (int64_t i = 0; i < net->param_count(); ++i) EXPECT_EQ(other->param_data()[i], net->param_data()[i]);
  // A blob of the wrong shape names the layer and both shapes.
  LayerParameter* ip_a = nullptr;
  for (auto& layer : *saved.mutable_layer())
    if (layer.name() == "ip_a") ip_a = &layer;
  ASSERT_NE(ip_a, nullptr);
  ip_a->mutable_blobs(0)->mutable_shape()->set_dim(0, 5);
  try {
    other->CopyTrainedLayersFrom(saved);
    FAIL();
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("layer ip_a"), std::string::npos) << what;
    EXPECT_NE(what.find("2 3"), std::string::npos) << what;
    EXPECT_NE(what.find("5 3"), std::string::npos) << what;
  }
}

}  // namespace cortado::test
