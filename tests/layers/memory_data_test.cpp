// memory_data_test.cpp — MemoryData: top shapes from memory_data_param, batches served in order from
// the caller's arrays with wrap-around (the arrays are not copied), labels, transform_param left unapplied (as Caffe),
// set_batch_size, the errors (Reset with a partial batch, Forward before Reset, bad parameters), and
// a whole CPU net (MemoryData, InnerProduct, SoftmaxWithLoss) fed through Reset.
#include <cmath>
#include <memory>
#include <vector>

#include "cortado/error.hpp"
#include "cortado/memory_data.hpp"
#include "cortado/net.hpp"
#include "test_util.hpp"

namespace cortado::test {

namespace {

// Batches of 2 items of 1×1×3 values.
const char* kLayer =
    "name: 'm' type: 'MemoryData' memory_data_param { batch_size: 2 channels: 1 height: 1 width: 3 }";

MemoryDataLayer& MemoryData(LayerFixture& f) { return dynamic_cast<MemoryDataLayer&>(f.layer()); }

// n items of 3 values: item i holds 10·i, 10·i + 1, 10·i + 2 and label i.
std::vector<float> Items(int n) {
  std::vector<float> data;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < 3; ++j) data.push_back(10.0f * i + j);
  return data;
}
std::vector<float> Labels(int n) {
  std::vector<float> labels;
  for (int i = 0; i < n; ++i) labels.push_back(static_cast<float>(i));
  return labels;
}

std::vector<float> Values(const Blob& blob) {
  return std::vector<float>(blob.data(), blob.data() + blob.count());
}

}  // namespace

TEST(MemoryData, ShapesFromTheParameter) {
  LayerFixture f("type: 'MemoryData' memory_data_param { batch_size: 4 channels: 3 height: 5 width: 2 }", {},
                 2);
  EXPECT_EQ(f.top(0).shape(), (std::vector<int>{4, 3, 5, 2}));
  EXPECT_EQ(f.top(1).shape(), (std::vector<int>{4}));
  const MemoryDataLayer& layer = MemoryData(f);
  EXPECT_EQ(layer.batch_size(), 4);
  EXPECT_EQ(layer.channels(), 3);
  EXPECT_EQ(layer.height(), 5);
  EXPECT_EQ(layer.width(), 2);
  EXPECT_FALSE(layer.has_data());
  EXPECT_FALSE(layer.IsCapturable());
  EXPECT_FALSE(layer.ReshapesTopsInForward());
}

TEST(MemoryData, ServesBatchesInOrderAndWrapsAround) {
  LayerFixture f(kLayer, {}, 2);
  std::vector<float> data = Items(6), labels = Labels(6);
  MemoryData(f).Reset(data.data(), labels.data(), 6);
  EXPECT_TRUE(MemoryData(f).has_data());
  const std::vector<std::vector<float>> expected_data = {
      {0, 1, 2, 10, 11, 12}, {20, 21, 22, 30, 31, 32}, {40, 41, 42, 50, 51, 52}, {0, 1, 2, 10, 11, 12}};
  const std::vector<std::vector<float>> expected_labels = {{0, 1}, {2, 3}, {4, 5}, {0, 1}};
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(f.Forward(), 0.0f);
    EXPECT_EQ(Values(f.top(0)), expected_data[k]) << "forward " << k;
    EXPECT_EQ(Values(f.top(1)), expected_labels[k]) << "forward " << k;
  }
  EXPECT_EQ(MemoryData(f).position(), 2);

  // The layer reads the caller's arrays, not a copy: a change shows in the next batch.
  data[6] = -7.0f;
  labels[3] = 9.0f;
  f.Forward();
  EXPECT_EQ(Values(f.top(0)), (std::vector<float>{-7, 21, 22, 30, 31, 32}));
  EXPECT_EQ(Values(f.top(1)), (std::vector<float>{2, 9}));

  // Reset starts again from the first item of the new arrays.
  std::vector<float> other = Items(2), other_labels = {5, 6};
  MemoryData(f).Reset(other.data(), other_labels.data(), 2);
  for (int k = 0; k < 2; ++k) {
    f.Forward();
    EXPECT_EQ(Values(f.top(0)), (std::vector<float>{0, 1, 2, 10, 11, 12}));
    EXPECT_EQ(Values(f.top(1)), (std::vector<float>{5, 6}));
  }
}

// Caffe applies transform_param to Datums added one by one, never to Reset's arrays.
TEST(MemoryData, TransformParamIsNotAppliedToTheArrays) {
  LayerFixture f("name: 'm' type: 'MemoryData' transform_param { scale: 0.5 mirror: true mean_value: 3 } "
                 "memory_data_param { batch_size: 1 channels: 1 height: 1 width: 3 }",
                 {}, 2);
  std::vector<float> data = Items(2), labels = Labels(2);
  MemoryData(f).Reset(data.data(), labels.data(), 2);
  f.Forward();
  f.Forward();
  EXPECT_EQ(Values(f.top(0)), (std::vector<float>{10, 11, 12}));
  EXPECT_EQ(Values(f.top(1)), (std::vector<float>{1}));
}

TEST(MemoryData, ResetWithAPartialBatchIsAnError) {
  LayerFixture f(kLayer, {}, 2);
  std::vector<float> data = Items(5), labels = Labels(5);
  const std::string error = ErrorOf([&] { MemoryData(f).Reset(data.data(), labels.data(), 5); });
  EXPECT_NE(error.find("layer m (MemoryData)"), std::string::npos) << error;
  EXPECT_NE(error.find("multiple of the batch size 2"), std::string::npos) << error;
  EXPECT_FALSE(MemoryData(f).has_data());
  EXPECT_NE(ErrorOf([&] { MemoryData(f).Reset(data.data(), labels.data(), 0); }), "");
  EXPECT_NE(ErrorOf([&] { MemoryData(f).Reset(nullptr, labels.data(), 4); }).find("layer m (MemoryData)"),
            std::string::npos);
}

TEST(MemoryData, ForwardBeforeResetIsAnError) {
  LayerFixture f(kLayer, {}, 2);
  EXPECT_EQ(ErrorOf([&] { f.Forward(); }),
            "layer m (MemoryData): no data: call set_input_arrays (Reset) first");
}

TEST(MemoryData, SmallerBatchSizeReshapesTheTopsAndLargerIsAnError) {
  LayerFixture f(kLayer, {}, 2);
  std::vector<float> data = Items(4), labels = Labels(4);
  MemoryData(f).Reset(data.data(), labels.data(), 4);
  f.Forward();  // items 0, 1

  const std::string larger = ErrorOf([&] { MemoryData(f).set_batch_size(3); });
  EXPECT_NE(larger.find("layer m (MemoryData)"), std::string::npos) << larger;
  EXPECT_NE(larger.find("between 1 and 2"), std::string::npos) << larger;
  EXPECT_NE(ErrorOf([&] { MemoryData(f).set_batch_size(0); }), "");
  EXPECT_EQ(MemoryData(f).batch_size(), 2);

  MemoryData(f).set_batch_size(1);  // from the first item again
  EXPECT_EQ(MemoryData(f).batch_size(), 1);
  EXPECT_TRUE(MemoryData(f).ReshapesTopsInForward());
  const std::vector<std::vector<float>> expected = {
      {0, 1, 2}, {10, 11, 12}, {20, 21, 22}, {30, 31, 32}, {0, 1, 2}};
  for (int k = 0; k < 5; ++k) {
    f.Forward();
    EXPECT_EQ(f.top(0).shape(), (std::vector<int>{1, 1, 1, 3}));
    EXPECT_EQ(f.top(1).shape(), (std::vector<int>{1}));
    EXPECT_EQ(Values(f.top(0)), expected[k]) << "forward " << k;
    EXPECT_EQ(Values(f.top(1)), (std::vector<float>{static_cast<float>(k % 4)})) << "forward " << k;
  }

  MemoryData(f).set_batch_size(2);  // back to the planned size
  EXPECT_TRUE(MemoryData(f).ReshapesTopsInForward());  // once more, so the layers after follow
  f.Forward();
  EXPECT_FALSE(MemoryData(f).ReshapesTopsInForward());
  EXPECT_EQ(f.top(0).shape(), (std::vector<int>{2, 1, 1, 3}));
  EXPECT_EQ(Values(f.top(0)), (std::vector<float>{0, 1, 2, 10, 11, 12}));
  EXPECT_EQ(Values(f.top(1)), (std::vector<float>{0, 1}));
}

TEST(MemoryData, ItemsNotAMultipleOfANewBatchSizeAreAnError) {
  LayerFixture f("name: 'm' type: 'MemoryData' "
                 "memory_data_param { batch_size: 3 channels: 1 height: 1 width: 3 }",
                 {}, 2);
  std::vector<float> data = Items(6), labels = Labels(6);
  MemoryData(f).Reset(data.data(), labels.data(), 6);
  MemoryData(f).set_batch_size(2);  // 6 items: fine
  f.Forward();
  EXPECT_EQ(Values(f.top(1)), (std::vector<float>{0, 1}));
  MemoryData(f).set_batch_size(1);
  MemoryData(f).Reset(data.data(), labels.data(), 5);  // 5 items of batch 1
  MemoryData(f).set_batch_size(2);
  const std::string error = ErrorOf([&] { f.Forward(); });
  EXPECT_NE(error.find("layer m (MemoryData): the 5 items given to Reset are not a multiple of the batch "
                       "size 2"),
            std::string::npos)
      << error;
}

namespace {
std::string SetUpError(const std::string& text, int tops = 2) {
  try {
    LayerFixture f(text, {}, tops);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(MemoryData, BadParametersAreErrors) {
  const std::string missing =
      SetUpError("name: 'm' type: 'MemoryData' memory_data_param { batch_size: 2 channels: 1 height: 1 }");
  EXPECT_NE(missing.find("layer m (MemoryData): memory_data_param width is 0"), std::string::npos) << missing;
  EXPECT_NE(SetUpError("name: 'm' type: 'MemoryData'"), "");
  EXPECT_EQ(SetUpError("name: 'm' type: 'MemoryData' transform_param { scale: 2 mirror: false } "
                       "memory_data_param { batch_size: 2 channels: 1 height: 1 width: 1 }"),
            "");
  EXPECT_NE(SetUpError(kLayer, 1).find("exactly 2 top"), std::string::npos);
}

namespace {

// 4 items of 2×1×2 values; an InnerProduct with zero weights and a bias of 0, 0, 0 gives equal scores
// to the 3 classes, so each batch's loss is ln 3 whatever the items.
const char* kNet = R"(
name: "memory"
layer { name: "m" type: "MemoryData" top: "data" top: "label"
        memory_data_param { batch_size: 2 channels: 2 height: 1 width: 2 } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
        inner_product_param { num_output: 3 weight_filler { type: "constant" value: 0 } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
)";

std::unique_ptr<Net> BuildNet(Context& ctx) {
  NetParameter param = ParseNet(kNet);
  param.mutable_state()->set_phase(TRAIN);
  auto net = std::make_unique<Net>(param, ctx, "memory.prototxt");
  net->KeepReadable({"data", "label", "ip"});
  net->AllocateOwnArena();
  return net;
}

}  // namespace

TEST(MemoryData, NetRunsForwardAfterReset) {
  Context ctx(Device::kCPU, 5);
  std::unique_ptr<Net> net = BuildNet(ctx);
  auto* layer = dynamic_cast<MemoryDataLayer*>(net->layer_by_name("m"));
  ASSERT_NE(layer, nullptr);

  const std::string before = ErrorOf([&] { net->Forward(); });
  EXPECT_NE(before.find("layer m (MemoryData): no data: call set_input_arrays (Reset) first"),
            std::string::npos)
      << before;

  std::vector<float> data(4 * 4), labels = {2, 0, 1, 1};
  for (size_t i = 0; i < data.size(); ++i) data[i] = 0.25f * static_cast<float>(i);
  layer->Reset(data.data(), labels.data(), 4);
  for (int k = 0; k < 3; ++k) {
    EXPECT_NEAR(net->Forward(), std::log(3.0f), 1e-5f) << "forward " << k;
    const int first = (k % 2) * 2;
    EXPECT_EQ(Values(*net->blob_by_name("data")),
              std::vector<float>(data.begin() + first * 4, data.begin() + (first + 2) * 4));
    EXPECT_EQ(Values(*net->blob_by_name("label")),
              std::vector<float>(labels.begin() + first, labels.begin() + first + 2));
  }
  net->Backward();  // MemoryData's backward does nothing

  // A smaller batch reshapes the layers after the data layer; the planned one restores them.
  layer->set_batch_size(1);
  EXPECT_NEAR(net->Forward(), std::log(3.0f), 1e-5f);
  EXPECT_EQ(net->blob_by_name("ip")->shape(), (std::vector<int>{1, 3}));
  EXPECT_EQ(Values(*net->blob_by_name("label")), (std::vector<float>{2}));
  net->Forward();
  EXPECT_EQ(Values(*net->blob_by_name("label")), (std::vector<float>{0}));
  layer->set_batch_size(2);
  EXPECT_NEAR(net->Forward(), std::log(3.0f), 1e-5f);
  EXPECT_EQ(net->blob_by_name("ip")->shape(), (std::vector<int>{2, 3}));
  EXPECT_EQ(Values(*net->blob_by_name("label")), (std::vector<float>{2, 0}));

  // A label the loss cannot take is the loss's error, as with any data layer.
  labels[2] = 7;
  const std::string bad = ErrorOf([&] { net->Forward(); });
  EXPECT_NE(bad.find("layer loss (SoftmaxWithLoss)"), std::string::npos) << bad;
}

}  // namespace cortado::test
