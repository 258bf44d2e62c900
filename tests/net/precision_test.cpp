// precision_test.cpp — mixed-precision nets (net_precision.cpp): the storage types NVIDIA Caffe's
// fields ask for, the Cast layers where types change, and values rounded to 16 bits wherever a blob
// is stored in 16 bits, forward and backward, checked against the float net rounded by hand (the
// convolution there is engine CAFFE: computed in float between Casts); the layers that compute on
// 16-bit storage themselves (element-wise layers, BatchNorm, Scale), with no Casts around them; and
// the bf16 convolution that oneDNN computes itself, against a convolution of the bf16 values in double.
#include <algorithm>
#include <cmath>

#include "cortado/cpu_engine.hpp"
#include "cortado/net.hpp"
#include "test_util.hpp"

namespace cortado::test {

namespace {

const char* kBody = R"(
layer { name: "in" type: "Input" top: "data" top: "label"
        input_param { shape { dim: 4 dim: 3 dim: 6 dim: 6 } shape { dim: 4 } } }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
        convolution_param { num_output: 5 kernel_size: 3 weight_filler { type: "gaussian" std: 0.3 }
                            bias_filler { type: "gaussian" std: 0.1 } engine: CAFFE } }
layer { name: "relu1" type: "ReLU" bottom: "conv1" top: "conv1" }
layer { name: "ip" type: "InnerProduct" bottom: "conv1" top: "ip"
        inner_product_param { num_output: 3 weight_filler { type: "gaussian" std: 0.2 } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
)";

struct Built {
  Context ctx{Device::kCPU, 1};
  std::unique_ptr<Net> net;
};

std::unique_ptr<Built> Build(const std::string& fields, Phase phase = TRAIN) {
  auto built = std::make_unique<Built>();
  NetParameter param = ParseNet(fields + kBody);
  param.mutable_state()->set_phase(phase);
  built->net = std::make_unique<Net>(param, built->ctx);
  built->net->KeepReadable({"conv1", "ip"});
  built->net->AllocateOwnArena();
  return built;
}

// The same inputs and weights in both nets.
void FillAlike(Net& a, Net& b) {
  std::mt19937 rng(3);
  FillGaussian(a.blob_by_name("data"), rng);
  b.blob_by_name("data")->WriteData(a.blob_by_name("data")->ReadData());
  std::vector<float> labels = {0, 2, 1, 2};
  a.blob_by_name("label")->WriteData(labels);
  b.blob_by_name("label")->WriteData(labels);
  for (const char* layer : {"conv1", "ip"})
    for (size_t k = 0; k < a.layer_by_name(layer)->blobs().size(); ++k)
      b.layer_by_name(layer)->blobs()[k]->WriteData(a.layer_by_name(layer)->blobs()[k]->ReadData());
}

// Convolution (engine CAFFE: float, then a Cast) → BatchNorm → Scale → ReLU → InnerProduct → loss, each
// top a blob of its own, so that a test reads what BatchNorm and Scale stored.
const char* kChannelLayers = R"(
force_backward: true
layer { name: "in" type: "Input" top: "data" top: "label"
        input_param { shape { dim: 4 dim: 3 dim: 6 dim: 6 } shape { dim: 4 } } }
layer { name: "conv" type: "Convolution" bottom: "data" top: "conv"
        convolution_param { num_output: 5 kernel_size: 3 engine: CAFFE } }
layer { name: "bn" type: "BatchNorm" bottom: "conv" top: "bn" }
layer { name: "scale" type: "Scale" bottom: "bn" top: "sc" scale_param { bias_term: true } }
layer { name: "relu" type: "ReLU" bottom: "sc" top: "r" }
layer { name: "ip" type: "InnerProduct" bottom: "r" top: "ip" inner_product_param { num_output: 3 } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
)";

// `text` with the first occurrence of each `from` (which must occur) replaced by its `to`, in order.
std::string Edited(std::string text, const std::vector<std::pair<std::string, std::string>>& edits) {
  for (const auto& [from, to] : edits) {
    const size_t at = text.find(from);
    if (at == std::string::npos) {
      ADD_FAILURE() << "no " << from << " in the net";
      continue;
    }
    text.replace(at, from.size(), to);
  }
  return text;
}

// The Caffe idiom of the same net: BatchNorm, Scale and ReLU in place on the convolution's top.
std::string InPlaceChannelLayers() {
  return Edited(kChannelLayers, {{"top: \"bn\"", "top: \"conv\""},
                                 {"bottom: \"bn\" top: \"sc\"", "bottom: \"conv\" top: \"conv\""},
                                 {"bottom: \"sc\" top: \"r\"", "bottom: \"conv\" top: \"conv\""},
                                 {"bottom: \"r\"", "bottom: \"conv\""}});
}

// The net above (or another form of it) in `precision`, in `phase` (TEST: BatchNorm's global
// statistics), with trained-like weights and statistics and a Gaussian image: the same values for the
// same arguments. The blobs of `keep` that the net has stay readable (an intermediate blob of a fused
// chain so kept runs its chain layer by layer).
std::unique_ptr<Built> BuildChannelLayers(Type precision, Phase phase, const std::string& text = kChannelLayers,
                                          const std::vector<std::string>& keep = {"conv", "bn", "sc", "r"}) {
  auto built = std::make_unique<Built>();
  NetParameter param = ParseNet(text);
  param.mutable_state()->set_phase(phase);
  SetNetPrecision(&param, precision);
  built->net = std::make_unique<Net>(param, built->ctx);
  Net& net = *built->net;
  for (const std::string& blob : keep)
    if (net.has_blob(blob)) net.KeepReadable({blob});
  net.AllocateOwnArena();
  FillTrainedLikeWeights(net, 5);
  std::mt19937 rng(8);
  FillGaussian(net.blob_by_name("data"), rng);
  net.blob_by_name("label")->WriteData({0, 2, 1, 2});
  return built;
}

// v is `exact` rounded once to `type`: stored in that type, and within half its step of `exact`, give or
// take `slack` (the float rounding of the reference's own arithmetic, which may order or fuse its
// operations otherwise than the layer's).
::testing::AssertionResult RoundedOnce(DataType type, float v, double exact, double slack) {
  const bool bf16 = type == DataType::kBFloat16;
  const double half_step = std::ldexp(1.0, bf16 ? -8 : -11);  // relative, for normal values
  const double least = bf16 ? 0.0 : std::ldexp(1.0, -25);     // half of fp16's smallest subnormal
  if (v != RoundedTo(type, v)) return ::testing::AssertionFailure() << v << " is not a " << DataTypeName(type) << " value";
  if (std::fabs(v - exact) > half_step * std::fabs(exact) + least + slack)
    return ::testing::AssertionFailure() << v << " is not " << exact << " rounded to " << DataTypeName(type);
  return ::testing::AssertionSuccess();
}

}  // namespace

TEST(Precision, AFloatNetIsLeftAsItIs) {
  auto built = Build("");
  EXPECT_FALSE(built->net->mixed_precision());
  EXPECT_EQ(CountLayers(*built->net, "Cast"), 0);
  NetParameter saved;
  built->net->ToProto(&saved);
  for (const LayerParameter& layer : saved.layer()) EXPECT_FALSE(layer.has_forward_type()) << layer.name();
}

TEST(Precision, Bf16NetStoresTheLayersTopsIn16BitsAndKeepsTheLossFloat) {
  auto built = Build("default_forward_type: BFLOAT16 default_backward_type: BFLOAT16");
  Net& net = *built->net;
  EXPECT_TRUE(net.mixed_precision());
  EXPECT_GT(CountLayers(net, "Cast"), 0);
  for (const char* blob : {"conv1", "ip"}) {
    EXPECT_EQ(net.blob_by_name(blob)->data_type(), DataType::kBFloat16) << blob;
    EXPECT_EQ(net.blob_by_name(blob)->diff_type(), DataType::kBFloat16) << blob;
  }
  for (const char* blob : {"data", "label", "loss"}) EXPECT_EQ(net.blob_by_name(blob)->data_type(), DataType::kFloat);
  // Learnable parameters stay float (the solver's master copy).
  EXPECT_EQ(net.layer_by_name("conv1")->blobs()[0]->data_type(), DataType::kFloat);
}

// conv1 (after its ReLU, in place) holds the float net's conv1 rounded to bf16: both compute the
// convolution in float on the same float image, and a ReLU of a bf16 value is exact. ip then reads the
// rounded conv1 and rounds its own output; the loss reads ip in float and its gradient reaches ip
// rounded to bf16.
TEST(Precision, Bf16ValuesAreTheFloatValuesRoundedWhereverTheyAreStored) {
  auto wide = Build("");
  auto narrow = Build("default_forward_type: BFLOAT16 default_backward_type: BFLOAT16");
  FillAlike(*wide->net, *narrow->net);
  wide->net->Forward();
  const float loss = narrow->net->Forward();
  narrow->net->Backward();
  const std::vector<float> conv_float = wide->net->blob_by_name("conv1")->ReadData();
  const std::vector<float> conv = narrow->net->blob_by_name("conv1")->ReadData();
  ASSERT_EQ(conv.size(), conv_float.size());
  int changed = 0;
  for (size_t i = 0; i < conv.size(); ++i) {
    ASSERT_EQ(conv[i], RoundedTo(DataType::kBFloat16, conv_float[i])) << i;
    changed += conv[i] != conv_float[i];
  }
  EXPECT_GT(changed, static_cast<int>(conv.size()) / 4);  // the rounding is real
  // ip = W · conv1 + b in float, then rounded (the sum in double here: within a bf16 step).
  const Blob& w = *narrow->net->layer_by_name("ip")->blobs()[0];
  const Blob& b = *narrow->net->layer_by_name("ip")->blobs()[1];
  const std::vector<float> ip = narrow->net->blob_by_name("ip")->ReadData();
  const int64_t features = w.shape(1);
  std::vector<double> exact(12);
  for (int n = 0; n < 4; ++n)
    for (int o = 0; o < 3; ++o) {
      double sum = b.data()[o];
      for (int64_t k = 0; k < features; ++k) sum += double(w.data()[o * features + k]) * conv[n * features + k];
      exact[n * 3 + o] = sum;
      EXPECT_EQ(ip[n * 3 + o], RoundedTo(DataType::kBFloat16, static_cast<float>(sum))) << n << " " << o;
    }
  // The loss in float from the rounded ip; its gradient (softmax − one-hot) / 4, rounded into ip's diff.
  const int labels[4] = {0, 2, 1, 2};
  const std::vector<float> dip = narrow->net->blob_by_name("ip")->ReadDiff();
  double expected_loss = 0;
  for (int n = 0; n < 4; ++n) {
    double top = -1e30, total = 0;
    for (int o = 0; o < 3; ++o) top = std::max(top, double(ip[n * 3 + o]));
    for (int o = 0; o < 3; ++o) total += std::exp(ip[n * 3 + o] - top);
    expected_loss -= std::log(std::exp(ip[n * 3 + labels[n]] - top) / total) / 4;
    for (int o = 0; o < 3; ++o) {
      const double p = std::exp(ip[n * 3 + o] - top) / total;
      const float gradient = static_cast<float>((p - (o == labels[n])) / 4);
      EXPECT_NEAR(dip[n * 3 + o], gradient, std::fabs(gradient) * std::ldexp(1.0, -8) + 1e-9);  // ≤ half a bf16 step
      EXPECT_EQ(dip[n * 3 + o], RoundedTo(DataType::kBFloat16, dip[n * 3 + o]));  // stored in bf16
    }
  }
  EXPECT_NEAR(loss, expected_loss, 1e-5);
  // The weights' gradient: ip's rounded gradient times the rounded conv1, summed in float.
  const std::vector<float> dw = narrow->net->layer_by_name("ip")->blobs()[0]->ReadDiff();
  for (int o = 0; o < 3; ++o)
    for (int64_t k = 0; k < features; k += 7) {
      double sum = 0;
      for (int n = 0; n < 4; ++n) sum += double(dip[n * 3 + o]) * conv[n * features + k];
      EXPECT_NEAR(dw[o * features + k], sum, 1e-5 * (1 + std::fabs(sum)));
    }
}

TEST(Precision, LayerFieldsOverrideTheNetsDefaults) {
  NetParameter param = ParseNet(kBody);
  param.mutable_layer(3)->set_forward_type(FLOAT16);  // ip only
  param.mutable_layer(3)->set_backward_type(FLOAT16);
  Context ctx(Device::kCPU, 1);
  Net net(param, ctx);
  EXPECT_EQ(net.blob_by_name("ip")->data_type(), DataType::kFloat16);
  EXPECT_EQ(net.blob_by_name("conv1")->data_type(), DataType::kFloat);
  // A layer that computes in float keeps it however it is asked.
  NetParameter loss_asks(ParseNet(kBody));
  loss_asks.mutable_layer(4)->set_forward_type(BFLOAT16);
  Net float_loss(loss_asks, ctx);
  EXPECT_EQ(float_loss.blob_by_name("loss")->data_type(), DataType::kFloat);
}

TEST(Precision, ATypeThatIsNotAStorageTypeIsAnErrorNamingTheLayer) {
  NetParameter param = ParseNet(std::string("default_forward_type: BFLOAT16\n") + kBody);
  param.mutable_layer(3)->set_backward_type(INT);
  Context ctx(Device::kCPU, 1);
  const std::string error = ErrorOf([&] { Net net(param, ctx, "mixed.prototxt"); });
  EXPECT_NE(error.find("mixed.prototxt: layer ip: backward_type: INT is not a storage type"), std::string::npos)
      << error;
}

// A bf16 net trains: the same few SGD steps lower its loss as they lower the float net's.
TEST(Precision, Bf16GradientsAreTheFloatGradientsWithinBf16Rounding) {
  auto wide = Build("");
  auto narrow = Build("default_forward_type: BFLOAT16 default_backward_type: BFLOAT16");
  FillAlike(*wide->net, *narrow->net);
  for (Net* net : {wide->net.get(), narrow->net.get()}) {
    net->ClearParamDiffs();
    net->Forward();
    net->Backward();
  }
  double dot = 0, wide_norm = 0, narrow_norm = 0;
  for (int64_t i = 0; i < wide->net->param_count(); ++i) {
    const double a = wide->net->param_diff()[i], b = narrow->net->param_diff()[i];
    dot += a * b, wide_norm += a * a, narrow_norm += b * b;
  }
  EXPECT_GT(dot / std::sqrt(wide_norm * narrow_norm), 0.999);  // the same direction, up to 16-bit rounding
  EXPECT_NEAR(std::sqrt(narrow_norm / wide_norm), 1.0, 0.02);
}

// ReLU, Sigmoid, TanH, Split and Eltwise SUM compute on 16-bit storage themselves (their functors over
// bf16, MapStored): in a bf16 net only the InnerProduct's output needs a Cast, and every value the
// element-wise layers store is their float result rounded once.
TEST(Precision, ElementWiseLayersComputeOnBf16StorageWithoutCasts) {
  NetParameter param = ParseNet(R"(
default_forward_type: BFLOAT16 default_backward_type: BFLOAT16 force_backward: true
layer { name: "in" type: "Input" top: "x" input_param { shape { dim: 4 dim: 10 } } }
layer { name: "ip" type: "InnerProduct" bottom: "x" top: "a" inner_product_param { num_output: 8 weight_filler { type: "gaussian" std: 1 } } }
layer { name: "relu" type: "ReLU" bottom: "a" top: "a" relu_param { negative_slope: 0.1 } }
layer { name: "sigmoid" type: "Sigmoid" bottom: "a" top: "s" }
layer { name: "tanh" type: "TanH" bottom: "a" top: "t" }
layer { name: "sum" type: "Eltwise" bottom: "s" bottom: "t" top: "u" eltwise_param { operation: SUM coeff: 1 coeff: -2 } }
)");
  param.mutable_state()->set_phase(TRAIN);
  Context ctx(Device::kCPU, 1);
  Net net(param, ctx);
  net.KeepReadable({"a", "s", "t", "u"});
  net.AllocateOwnArena();
  EXPECT_EQ(CountLayers(net, "Cast"), 1);  // the InnerProduct's float output into bf16
  std::mt19937 rng(6);
  FillGaussian(net.blob_by_name("x"), rng);
  net.Forward();
  const std::vector<float> a = net.blob_by_name("a")->ReadData(), sv = net.blob_by_name("s")->ReadData(),
                           tv = net.blob_by_name("t")->ReadData(), u = net.blob_by_name("u")->ReadData();
  const double step = std::ldexp(1.0, -8);  // half a bf16 step, relative: one rounding
  int negative = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    negative += a[i] < 0;
    const double sigmoid = 1.0 / (1.0 + std::exp(-double(a[i]))), tanh = std::tanh(double(a[i]));
    ASSERT_EQ(sv[i], RoundedTo(DataType::kBFloat16, sv[i]));
    ASSERT_NEAR(sv[i], sigmoid, step * std::fabs(sigmoid) + 1e-6) << a[i];
    ASSERT_NEAR(tv[i], tanh, step * std::fabs(tanh) + 1e-6) << a[i];
    ASSERT_EQ(u[i], RoundedTo(DataType::kBFloat16, sv[i] - 2 * tv[i]));  // s, then s − 2t rounded once
  }
  EXPECT_GT(negative, 0);  // the ReLU's slope was exercised
  std::vector<float> du(u.size());
  for (size_t i = 0; i < du.size(); ++i) du[i] = (i % 3 == 0) ? 0.5f : -0.25f;
  net.blob_by_name("u")->WriteDiff(du);
  net.Backward();
  const std::vector<float> ds = net.blob_by_name("s")->ReadDiff(), dt = net.blob_by_name("t")->ReadDiff();
  for (size_t i = 0; i < du.size(); ++i) {
    ASSERT_EQ(ds[i], du[i]);
    ASSERT_EQ(dt[i], -2 * du[i]);
  }
}

// BatchNorm (batch statistics in TRAIN, global ones in TEST) and Scale compute on bf16 and fp16 storage
// themselves (MapChannels and ChannelSums over the storage type): no Cast reads or writes their blobs
// (the CAFFE convolution's float output has its one Cast before them), and what they store is their
// float arithmetic on the 16-bit values they read, rounded once: x̂ = (x − mean) / std with the
// statistics summed in double over the 16-bit x, y = x̂ · γ + β, dx̂ = dy · γ, and BatchNorm's dx from the
// 16-bit dx̂ and x̂; γ's and β's gradients are float sums of the 16-bit products.
TEST(Precision, BatchNormAndScaleComputeOn16BitStorageWithoutCasts) {
  for (Type precision : {BFLOAT16, FLOAT16})
    for (Phase phase : {TRAIN, TEST}) {
      SCOPED_TRACE(Type_Name(precision) + (phase == TRAIN ? " TRAIN" : " TEST"));
      const DataType type = precision == BFLOAT16 ? DataType::kBFloat16 : DataType::kFloat16;
      auto built = BuildChannelLayers(precision, phase);
      Net& net = *built->net;
      const Blob* conv = net.blob_by_name("conv");
      const Blob* bn = net.blob_by_name("bn");
      const Blob* sc = net.blob_by_name("sc");
      for (const Blob* blob : {conv, bn, sc}) {
        EXPECT_EQ(blob->data_type(), type);
        EXPECT_EQ(blob->diff_type(), type);
      }
      int casts_into_bn = 0;
      for (size_t i = 0; i < net.layers().size(); ++i) {
        if (std::string(net.layers()[i]->type()) != "Cast") continue;
        for (const Blob* blob : net.bottom_vecs()[i]) EXPECT_TRUE(blob != conv && blob != bn && blob != sc) << net.layer_names()[i];
        for (const Blob* blob : net.top_vecs()[i]) {
          EXPECT_TRUE(blob != bn && blob != sc) << net.layer_names()[i];
          casts_into_bn += blob == conv;
        }
      }
      EXPECT_EQ(casts_into_bn, 1);  // the convolution's float output into 16 bits

      net.ClearParamDiffs();
      net.Forward();
      net.Backward();
      const Layer& bn_layer = *net.layer_by_name("bn");
      const Layer& scale_layer = *net.layer_by_name("scale");
      const std::vector<float> x = conv->ReadData(), x_norm = bn->ReadData(), y = sc->ReadData();
      const std::vector<float> dx = conv->ReadDiff(), dx_norm = bn->ReadDiff(), dy = sc->ReadDiff();
      const std::vector<float> gamma = scale_layer.blobs()[0]->ReadData(), beta = scale_layer.blobs()[1]->ReadData();
      const std::vector<float> dgamma = scale_layer.blobs()[0]->ReadDiff(), dbeta = scale_layer.blobs()[1]->ReadDiff();
      const int num = conv->shape(0), channels = conv->shape(1);
      const int spatial = conv->count(2), m = num * spatial;
      const float eps = 1e-5f;
      auto at = [&](int n, int c, int q) { return (static_cast<size_t>(n) * channels + c) * spatial + q; };
      int nonzero_dy = 0;
      for (int c = 0; c < channels; ++c) {
        // The statistics: the batch's, summed in double, or the stored ones (blob 2 their weight).
        float mean, std;
        if (phase == TRAIN) {
          double sum = 0, squares = 0;
          for (int n = 0; n < num; ++n)
            for (int q = 0; q < spatial; ++q) sum += x[at(n, c, q)];
          mean = static_cast<float>(sum / m);
          for (int n = 0; n < num; ++n)
            for (int q = 0; q < spatial; ++q) {
              const float d = x[at(n, c, q)] - mean;
              squares += double(d) * d;
            }
          std = std::sqrt(static_cast<float>(squares / m) + eps);
        } else {
          const float weight = bn_layer.blobs()[2]->ReadData()[0];
          mean = bn_layer.blobs()[0]->ReadData()[c] / weight;
          std = std::sqrt(bn_layer.blobs()[1]->ReadData()[c] / weight + eps);
        }
        // Forward: x̂, then y = x̂ · γ + β.
        for (int n = 0; n < num; ++n)
          for (int q = 0; q < spatial; ++q) {
            const size_t i = at(n, c, q);
            const float xn = (x[i] - mean) / std;
            ASSERT_TRUE(RoundedOnce(type, x_norm[i], xn, 1e-6 * (std::fabs(x[i]) + std::fabs(mean)) / std)) << i;
            if (phase == TRAIN) ASSERT_EQ(x_norm[i], RoundedTo(type, xn)) << i;  // the same float steps
            const double scaled = double(x_norm[i]) * gamma[c];
            ASSERT_TRUE(RoundedOnce(type, y[i], scaled + beta[c], 1e-6 * (std::fabs(scaled) + std::fabs(beta[c])))) << i;
          }
        // Backward through Scale: dx̂ = dy · γ (one product: exact before its rounding), and γ's and β's
        // gradients summed over the channel.
        double sum_dy = 0, sum_dy_x = 0;
        for (int n = 0; n < num; ++n)
          for (int q = 0; q < spatial; ++q) {
            const size_t i = at(n, c, q);
            nonzero_dy += dy[i] != 0;
            ASSERT_EQ(dx_norm[i], RoundedTo(type, dy[i] * gamma[c])) << i;
            sum_dy += dy[i];
            sum_dy_x += double(dy[i]) * x_norm[i];
          }
        EXPECT_NEAR(dbeta[c], sum_dy, 1e-6 * (1 + std::fabs(sum_dy))) << c;
        EXPECT_NEAR(dgamma[c], sum_dy_x, 1e-6 * (1 + std::fabs(sum_dy_x))) << c;
        // Backward through BatchNorm, from the stored dx̂ and x̂.
        double g = 0, g_x = 0;
        for (int n = 0; n < num; ++n)
          for (int q = 0; q < spatial; ++q) {
            const size_t i = at(n, c, q);
            g += dx_norm[i];
            g_x += double(dx_norm[i]) * x_norm[i];
          }
        const float mean_g = static_cast<float>(g / m), mean_g_x = static_cast<float>(g_x / m);
        for (int n = 0; n < num; ++n)
          for (int q = 0; q < spatial; ++q) {
            const size_t i = at(n, c, q);
            if (phase == TRAIN) {
              const float exact = (dx_norm[i] - mean_g - x_norm[i] * mean_g_x) / std;
              const double terms = std::fabs(dx_norm[i]) + std::fabs(mean_g) + std::fabs(x_norm[i] * mean_g_x);
              ASSERT_TRUE(RoundedOnce(type, dx[i], exact, 1e-6 * terms / std)) << i;
            } else {
              ASSERT_TRUE(RoundedOnce(type, dx[i], dx_norm[i] / std, 1e-6 * std::fabs(dx_norm[i]) / std)) << i;
            }
          }
      }
      EXPECT_GT(nonzero_dy, static_cast<int>(x.size()) / 4);  // the gradients were exercised
    }
}

// The same net with BatchNorm, Scale and ReLU in place on the convolution's top, as Caffe's nets write
// it, computes the same bits in 16 bits: the loss and every gradient. With global statistics (TEST)
// BatchNorm's backward reads no x̂, so Scale runs in place and keeps its x for dγ in a 16-bit copy of its
// own; in TRAIN the Net runs Scale out of place (its write would destroy BatchNorm's x̂). Both run layer
// by layer (the apart net's readable intermediate blobs keep it from fusing its chain; the in-place net
// has fuse: false): a fused chain computes in another order, which
// FusedBatchNormChainOn16BitStorageStoresWhatItsLayersStore allows for.
TEST(Precision, BatchNormAndScaleInPlaceOn16BitStorageComputeWhatTheyComputeOutOfPlace) {
  for (Type precision : {BFLOAT16, FLOAT16})
    for (Phase phase : {TRAIN, TEST}) {
      SCOPED_TRACE(Type_Name(precision) + (phase == TRAIN ? " TRAIN" : " TEST"));
      auto apart = BuildChannelLayers(precision, phase);
      auto in_place = BuildChannelLayers(precision, phase, "fuse: false\n" + InPlaceChannelLayers());
      EXPECT_EQ(CountLayers(*in_place->net, "Cast"), CountLayers(*apart->net, "Cast"));
      const Net& net = *in_place->net;
      for (size_t i = 0; i < net.layers().size(); ++i)
        if (net.layer_names()[i] == "scale") EXPECT_EQ(net.top_vecs()[i][0] == net.bottom_vecs()[i][0], phase == TEST);
      std::vector<float> losses;
      for (Net* net : {apart->net.get(), in_place->net.get()}) {
        net->ClearParamDiffs();
        losses.push_back(net->Forward());
        net->Backward();
      }
      EXPECT_EQ(losses[0], losses[1]);
      const Net& a = *apart->net;
      const Net& b = *in_place->net;
      ASSERT_EQ(a.learnable_params().size(), b.learnable_params().size());
      for (size_t k = 0; k < a.learnable_params().size(); ++k)
        EXPECT_EQ(a.learnable_params()[k]->ReadDiff(), b.learnable_params()[k]->ReadDiff()) << k;
      EXPECT_EQ(a.blob_by_name("data")->ReadDiff(), b.blob_by_name("data")->ReadDiff());
    }
}

// Where the CPU runs bf16 in hardware, a bf16 net's convolutions are oneDNN's bf16 ones: bf16 x and
// weights (the float master weights rounded at each forward), products summed in float, y rounded to
// bf16; the weight gradient in float from bf16 x and dy, added to the master's diff; dx rounded to bf16.
TEST(Precision, Bf16ConvolutionComputesOnBf16ValuesWithFloatSums) {
  if (!OneDnnEnabled() || !OneDnnRunsBf16())
    GTEST_SKIP() << "oneDNN's bf16 convolutions need a CPU with AVX-512 BF16 or AMX (this one: "
                 << OneDnnInstructionSet() << ")";
  NetParameter param = ParseNet(R"(
default_forward_type: BFLOAT16 default_backward_type: BFLOAT16 force_backward: true
layer { name: "in" type: "Input" top: "x" input_param { shape { dim: 2 dim: 3 dim: 5 dim: 6 } } }
layer { name: "conv" type: "Convolution" bottom: "x" top: "y"
        convolution_param { num_output: 4 kernel_size: 3 pad: 1 weight_filler { type: "gaussian" std: 0.5 }
                            bias_filler { type: "gaussian" std: 0.5 } } }
)");
  param.mutable_state()->set_phase(TRAIN);
  Context ctx(Device::kCPU, 1);
  Net net(param, ctx);
  net.AllocateOwnArena();
  EXPECT_STREQ(net.layer_by_name("conv")->chosen_engine(), "onednn_bf16");
  EXPECT_EQ(net.blob_by_name("y")->data_type(), DataType::kBFloat16);
  std::mt19937 rng(2);
  FillGaussian(net.blob_by_name("x"), rng);
  const Blob& w_blob = *net.layer_by_name("conv")->blobs()[0];
  const Blob& b_blob = *net.layer_by_name("conv")->blobs()[1];
  std::vector<float> x = net.blob_by_name("x")->ReadData(), w = w_blob.ReadData();
  for (float& v : x) v = RoundedTo(DataType::kBFloat16, v);
  for (float& v : w) v = RoundedTo(DataType::kBFloat16, v);
  const std::vector<float> b = b_blob.ReadData();
  net.Forward();
  const std::vector<float> y = net.blob_by_name("y")->ReadData();
  std::vector<float> dy(y.size());
  for (size_t i = 0; i < dy.size(); ++i) dy[i] = RoundedTo(DataType::kBFloat16, 0.01f * static_cast<float>(i % 37) - 0.2f);
  net.blob_by_name("y")->WriteDiff(dy);
  net.ClearParamDiffs();
  net.Backward();
  const std::vector<float> dx = net.blob_by_name("x")->ReadDiff(), dw = w_blob.ReadDiff();
  // Index helpers over N×C×H×W = 2×3×5×6 (x) and 2×4×5×6 (y), weights 4×3×3×3.
  auto xi = [](int n, int c, int h, int k) { return ((n * 3 + c) * 5 + h) * 6 + k; };
  auto yi = [](int n, int o, int h, int k) { return ((n * 4 + o) * 5 + h) * 6 + k; };
  auto wi = [](int o, int c, int r, int s) { return ((o * 3 + c) * 3 + r) * 3 + s; };
  const double step = std::ldexp(1.0, -7);  // one bf16 step, relative
  std::vector<double> dx_ref(x.size(), 0.0), dw_ref(w.size(), 0.0);
  for (int n = 0; n < 2; ++n)
    for (int o = 0; o < 4; ++o)
      for (int h = 0; h < 5; ++h)
        for (int k = 0; k < 6; ++k) {
          double sum = b[o];
          for (int c = 0; c < 3; ++c)
            for (int r = 0; r < 3; ++r)
              for (int s = 0; s < 3; ++s) {
                const int ih = h + r - 1, ik = k + s - 1;
                if (ih < 0 || ih >= 5 || ik < 0 || ik >= 6) continue;
                sum += double(w[wi(o, c, r, s)]) * x[xi(n, c, ih, ik)];
                dw_ref[wi(o, c, r, s)] += double(dy[yi(n, o, h, k)]) * x[xi(n, c, ih, ik)];
                dx_ref[xi(n, c, ih, ik)] += double(dy[yi(n, o, h, k)]) * w[wi(o, c, r, s)];
              }
          const float got = y[yi(n, o, h, k)];
          ASSERT_EQ(got, RoundedTo(DataType::kBFloat16, got));  // stored in bf16
          ASSERT_NEAR(got, sum, step * std::max(1.0, std::fabs(sum))) << n << " " << o << " " << h << " " << k;
        }
  for (size_t i = 0; i < dw.size(); ++i) ASSERT_NEAR(dw[i], dw_ref[i], 1e-4 * std::max(1.0, std::fabs(dw_ref[i]))) << i;
  for (size_t i = 0; i < dx.size(); ++i) {
    ASSERT_EQ(dx[i], RoundedTo(DataType::kBFloat16, dx[i])) << i;  // bf16 until its Cast
    ASSERT_NEAR(dx[i], dx_ref[i], step * std::max(1.0, std::fabs(dx_ref[i]))) << i;
  }
}

// ---- the fused BatchNorm chain on 16-bit storage -------------------------------------------------------
namespace {

// kChannelLayers with a chain the Net fuses: BatchNorm → Scale → ReLU in place on the Scale's top ("sc",
// the chain's last top; BatchNorm's top "bn" holds x̂) or, with scale_bias, BatchNorm (γ and β its own,
// x̂ in its own buffer) → ReLU in place on its top ("bn").
std::string FusableChannelLayers(bool scale_bias) {
  if (!scale_bias) return Edited(kChannelLayers, {{"bottom: \"sc\" top: \"r\"", "bottom: \"sc\" top: \"sc\""},
                                                  {"bottom: \"r\"", "bottom: \"sc\""}});
  return Edited(kChannelLayers,
                {{"top: \"bn\" }", "top: \"bn\" batch_norm_param { scale_bias: true } }"},
                 {"layer { name: \"scale\" type: \"Scale\" bottom: \"bn\" top: \"sc\" scale_param { bias_term: true } }\n", ""},
                 {"bottom: \"sc\" top: \"r\"", "bottom: \"bn\" top: \"bn\""},
                 {"bottom: \"r\"", "bottom: \"bn\""}});
}

// The net of FusableChannelLayers(scale_bias) fused against the same net with fuse: false, in bf16 and
// fp16, with batch statistics (TRAIN) and global ones (TEST; and TEST forward only, where the scale_bias
// chain keeps no x̂ and computes y from x in one pass): the chain is formed over the 16-bit blobs (none
// with fusion off), and it stores what the layers store. Both store float results rounded once, from
// float arithmetic in another order: the chain sums Σx and Σx² in one pass where BatchNorm sums
// Σ(x − mean)², and its dx takes γ·dz where the Scale stores dx̂ = γ·dz rounded. Two float values a float
// rounding apart may still round to neighbouring 16-bit values, so each fused value is checked to be
// rounded once (RoundedOnce: half a step of its own) from a value within the layers' rounding of theirs
// (half a step), a 16-bit step of what it is computed from where that is a stored value which may so
// differ (x̂ in y, dy in dx and in γ's and β's gradients), the layers' rounded dx̂, and float rounding
// (1e-6 of the terms).
void ExpectFusedChainStoresWhatItsLayersStore(bool scale_bias) {
  const std::string last = scale_bias ? "bn" : "sc";  // the chain's last top
  const std::string chain_name = scale_bias ? "bn+relu" : "bn+scale+relu";
  struct Pass {
    Phase phase;
    bool backward;
  };
  for (Type precision : {BFLOAT16, FLOAT16})
    for (const Pass pass : {Pass{TRAIN, true}, Pass{TEST, true}, Pass{TEST, false}}) {
      SCOPED_TRACE(Type_Name(precision) + (pass.phase == TRAIN ? " TRAIN" : " TEST") +
                   (pass.backward ? "" : " forward only"));
      const DataType type = precision == BFLOAT16 ? DataType::kBFloat16 : DataType::kFloat16;
      const double h = std::ldexp(1.0, type == DataType::kBFloat16 ? -8 : -11);  // half a step, relative
      std::string text = FusableChannelLayers(scale_bias);
      if (!pass.backward) text = Edited(text, {{"force_backward: true", ""}});
      auto fused = BuildChannelLayers(precision, pass.phase, text, {"conv", last});
      auto layers = BuildChannelLayers(precision, pass.phase, "fuse: false\n" + text, {"conv", last});
      for (Built* built : {fused.get(), layers.get()}) {
        const Net& net = *built->net;
        const auto at = std::find(net.layer_names().begin(), net.layer_names().end(), "bn");
        ASSERT_NE(at, net.layer_names().end());
        const int bn = static_cast<int>(at - net.layer_names().begin());
        EXPECT_EQ(net.bottom_vecs()[bn][0]->data_type(), type);  // BatchNorm computes on 16-bit storage
        EXPECT_EQ(net.top_vecs()[bn][0]->data_type(), type);
        EXPECT_EQ(net.blob_by_name(last)->data_type(), type);
        const Layer* chain = net.fused_layer_at(bn);
        if (built == layers.get()) {
          EXPECT_EQ(chain, nullptr);
        } else if (chain == nullptr) {
          ADD_FAILURE() << "no chain formed at bn";
        } else {
          EXPECT_EQ(chain->name(), chain_name);
        }
        built->net->ClearParamDiffs();
        built->net->Forward();
        if (pass.backward) built->net->Backward();
      }
      const Net& f = *fused->net;
      const Net& l = *layers->net;
      const Blob& conv = *l.blob_by_name("conv");
      const std::vector<float> x = conv.ReadData();
      ASSERT_EQ(f.blob_by_name("conv")->ReadData(), x);  // the same input
      const std::vector<float> y_f = f.blob_by_name(last)->ReadData(), y_l = l.blob_by_name(last)->ReadData();
      const Layer& bn_f = *f.layer_by_name("bn");
      const Layer& bn_l = *l.layer_by_name("bn");
      const Layer& affine_f = scale_bias ? bn_f : *f.layer_by_name("scale");
      const Layer& affine_l = scale_bias ? bn_l : *l.layer_by_name("scale");
      const int gamma_blob = scale_bias ? 3 : 0;
      const std::vector<float> gamma = affine_l.blobs()[gamma_blob]->ReadData();
      const std::vector<float> beta = affine_l.blobs()[gamma_blob + 1]->ReadData();
      // The running statistics (updated in TRAIN) are float: the same within float rounding.
      for (int k = 0; k < 3; ++k) {
        const std::vector<float> a = bn_f.blobs()[k]->ReadData(), b = bn_l.blobs()[k]->ReadData();
        for (size_t c = 0; c < b.size(); ++c) EXPECT_NEAR(a[c], b[c], 1e-6 * std::fabs(b[c])) << k << " " << c;
      }
      std::vector<float> dx_f, dx_l, dz, dgamma_f, dgamma_l, dbeta_f, dbeta_l;
      if (pass.backward) {
        dx_f = f.blob_by_name("conv")->ReadDiff();
        dx_l = conv.ReadDiff();
        dz = l.blob_by_name(last)->ReadDiff();  // the ReLU's in place: dy · (y > 0)
        dgamma_f = affine_f.blobs()[gamma_blob]->ReadDiff();
        dgamma_l = affine_l.blobs()[gamma_blob]->ReadDiff();
        dbeta_f = affine_f.blobs()[gamma_blob + 1]->ReadDiff();
        dbeta_l = affine_l.blobs()[gamma_blob + 1]->ReadDiff();
      }
      const int num = conv.shape(0), channels = conv.shape(1);
      const int spatial = conv.count(2), m = num * spatial;
      const float eps = 1e-5f;
      auto index = [&](int n, int c, int q) { return (static_cast<size_t>(n) * channels + c) * spatial + q; };
      int nonzero_dz = 0;
      for (int c = 0; c < channels; ++c) {
        // x̂ in double, for the allowances: from the batch's statistics, or the stored ones.
        double mean = 0, std = 0;
        if (pass.phase == TRAIN) {
          for (int n = 0; n < num; ++n)
            for (int q = 0; q < spatial; ++q) mean += x[index(n, c, q)];
          mean /= m;
          for (int n = 0; n < num; ++n)
            for (int q = 0; q < spatial; ++q) std += (x[index(n, c, q)] - mean) * (x[index(n, c, q)] - mean);
          std = std::sqrt(std / m + eps);
        } else {
          const double weight = bn_l.blobs()[2]->ReadData()[0];
          mean = bn_l.blobs()[0]->ReadData()[c] / weight;
          std = std::sqrt(bn_l.blobs()[1]->ReadData()[c] / weight + eps);
        }
        auto x_norm = [&](size_t i) { return (x[i] - mean) / std; };
        const double g = std::fabs(gamma[c]);
        // y = act(γ·x̂ + β): the layers' rounding of theirs, and γ times a step of x̂.
        for (int n = 0; n < num; ++n)
          for (int q = 0; q < spatial; ++q) {
            const size_t i = index(n, c, q);
            const double gx = g * std::fabs(x_norm(i));
            const double terms = g * (std::fabs(x[i]) + std::fabs(mean)) / std + std::fabs(beta[c]);
            ASSERT_TRUE(RoundedOnce(type, y_f[i], y_l[i], h * std::fabs(y_l[i]) + 2 * h * gx + 1e-6 * terms)) << i;
          }
        if (!pass.backward) continue;
        // γ's and β's gradients, Σdz·x̂ and Σdz (float): a step of each dy, and of each x̂.
        double sum_dz = 0, sum_dz_x = 0;  // Σ|dz| and Σ|dz·x̂|
        for (int n = 0; n < num; ++n)
          for (int q = 0; q < spatial; ++q) {
            const size_t i = index(n, c, q);
            nonzero_dz += dz[i] != 0;
            sum_dz += std::fabs(dz[i]);
            sum_dz_x += std::fabs(dz[i] * x_norm(i));
          }
        EXPECT_NEAR(dbeta_f[c], dbeta_l[c], (2 * h + 1e-6) * sum_dz) << c;
        EXPECT_NEAR(dgamma_f[c], dgamma_l[c], (4 * h + 1e-6) * sum_dz_x) << c;
        // dx = (γ·dz − mean(γ·dz) − x̂·mean(γ·dz·x̂)) / std (global statistics: γ·dz / std): the layers'
        // rounding of theirs; a step of dy and the layers' rounded dx̂ (half a step) in each term; a step of
        // x̂ where it multiplies, and in the sum that makes mean(γ·dz·x̂).
        const double mean_dz = g * sum_dz / m, mean_dz_x = g * sum_dz_x / m;  // of |γ·dz|, |γ·dz·x̂|
        for (int n = 0; n < num; ++n)
          for (int q = 0; q < spatial; ++q) {
            const size_t i = index(n, c, q);
            const double e = g * std::fabs(dz[i]), xn = std::fabs(x_norm(i));
            const double terms = pass.phase == TRAIN ? e + mean_dz + xn * mean_dz_x : e;
            const double steps = pass.phase == TRAIN ? 3 * h * terms + 4 * h * xn * mean_dz_x : 3 * h * terms;
            ASSERT_TRUE(RoundedOnce(type, dx_f[i], dx_l[i], h * std::fabs(dx_l[i]) + (steps + 1e-6 * terms) / std))
                << i;
          }
      }
      if (pass.backward) EXPECT_GT(nonzero_dz, static_cast<int>(x.size()) / 4);  // the gradients were exercised
    }
}

}  // namespace

// BatchNorm → Scale → ReLU, the chain ResNet's blocks are made of, fused over bf16 and fp16 blobs.
TEST(Precision, FusedBatchNormChainOn16BitStorageStoresWhatItsLayersStore) {
  ExpectFusedChainStoresWhatItsLayersStore(false);
}

// NVIDIA's BatchNorm with scale_bias → ReLU, fused over bf16 and fp16 blobs; with fusion off the
// BatchNorm still runs as a chain of its own (x̂ kept in its own buffer, in the blobs' 16-bit type), the
// ReLU after it. (Needs the storage plan to let a scale_bias BatchNorm compute on 16-bit blobs:
// net_precision.cpp's ComputesOn.)
TEST(Precision, FusedScaleBiasBatchNormChainOn16BitStorageStoresWhatItsLayersStore) {
  ExpectFusedChainStoresWhatItsLayersStore(true);
}

// Eltwise SUM → ReLU runs fused on 16-bit storage too (MapStored over the chain's type) and stores
// what its two layers store, bit for bit: a ReLU of the rounded sum is the rounded ReLU of the sum, and
// with coefficients of 1 the gradients are the ReLU's, rounded once either way.
TEST(Precision, FusedEltwiseReLUOn16BitStorageStoresWhatItsLayersStore) {
  const std::string text = R"(
force_backward: true
layer { name: "in" type: "Input" top: "x" input_param { shape { dim: 4 dim: 10 } } }
layer { name: "ipa" type: "InnerProduct" bottom: "x" top: "a" inner_product_param { num_output: 8 weight_filler { type: "gaussian" std: 1 } } }
layer { name: "ipb" type: "InnerProduct" bottom: "x" top: "b" inner_product_param { num_output: 8 weight_filler { type: "gaussian" std: 1 } } }
layer { name: "sum" type: "Eltwise" bottom: "a" bottom: "b" top: "s" }
layer { name: "relu" type: "ReLU" bottom: "s" top: "s" }
)";
  for (Type precision : {BFLOAT16, FLOAT16}) {
    SCOPED_TRACE(Type_Name(precision));
    struct Run {
      Context ctx{Device::kCPU, 1};
      std::unique_ptr<Net> net;
    };
    Run fused, layers;
    for (Run* run : {&fused, &layers}) {
      NetParameter param = ParseNet((run == &layers ? "fuse: false\n" : "") + text);
      param.mutable_state()->set_phase(TRAIN);
      SetNetPrecision(&param, precision);
      run->net = std::make_unique<Net>(param, run->ctx);
      run->net->KeepReadable({"a", "b"});
      run->net->AllocateOwnArena();
    }
    const auto& names = fused.net->layer_names();
    const int sum = static_cast<int>(std::find(names.begin(), names.end(), "sum") - names.begin());
    ASSERT_NE(fused.net->fused_layer_at(sum), nullptr);
    EXPECT_EQ(fused.net->fused_layer_at(sum)->name(), "sum+relu");
    EXPECT_NE(fused.net->blob_by_name("s")->data_type(), DataType::kFloat);
    std::mt19937 rng(8);
    FillGaussian(fused.net->blob_by_name("x"), rng);
    layers.net->blob_by_name("x")->WriteData(fused.net->blob_by_name("x")->ReadData());
    for (const char* ip : {"ipa", "ipb"})
      for (size_t k = 0; k < 2; ++k)
        layers.net->layer_by_name(ip)->blobs()[k]->WriteData(fused.net->layer_by_name(ip)->blobs()[k]->ReadData());
    std::vector<float> ds(fused.net->blob_by_name("s")->count());
    for (size_t i = 0; i < ds.size(); ++i) ds[i] = 0.01f * static_cast<float>(i) - 0.15f;
    for (Run* run : {&fused, &layers}) {
      run->net->Forward();
      run->net->blob_by_name("s")->WriteDiff(ds);
      run->net->Backward();
    }
    const std::vector<float> s = fused.net->blob_by_name("s")->ReadData();
    EXPECT_EQ(s, layers.net->blob_by_name("s")->ReadData());
    EXPECT_GT(std::count(s.begin(), s.end(), 0.0f), 0);  // the ReLU cut some sums
    for (const char* blob : {"a", "b"})
      EXPECT_EQ(fused.net->blob_by_name(blob)->ReadDiff(), layers.net->blob_by_name(blob)->ReadDiff()) << blob;
  }
}

// A MAX pooling's argmax top holds indices h·W + w: in a 16-bit net the layer stays float, so an index
// past bf16's 256 consecutive integers is still exact (1599 here).
TEST(Precision, MaxPoolingArgmaxTopStaysFloatInA16BitNet) {
  NetParameter param = ParseNet(R"(
default_forward_type: BFLOAT16 default_backward_type: BFLOAT16
layer { name: "in" type: "Input" top: "x" input_param { shape { dim: 1 dim: 1 dim: 40 dim: 40 } } }
layer { name: "relu" type: "ReLU" bottom: "x" top: "r" }
layer { name: "pool" type: "Pooling" bottom: "r" top: "p" top: "mask" pooling_param { pool: MAX kernel_size: 40 } }
)");
  Context ctx(Device::kCPU, 1);
  Net net(param, ctx);
  net.AllocateOwnArena();
  EXPECT_EQ(net.blob_by_name("r")->data_type(), DataType::kBFloat16);
  EXPECT_EQ(net.blob_by_name("mask")->data_type(), DataType::kFloat);
  std::vector<float> x(1600, 0.0f);
  x[1599] = 1.0f;  // the maximum at h = 39, w = 39
  net.blob_by_name("x")->WriteData(x);
  net.Forward();
  EXPECT_EQ(net.blob_by_name("mask")->ReadData(), std::vector<float>{1599.0f});
  EXPECT_EQ(net.blob_by_name("p")->ReadData(), std::vector<float>{1.0f});
}

}  // namespace cortado::test
