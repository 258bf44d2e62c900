// precision_test.cpp — mixed-precision nets (net_precision.cpp): the storage types NVIDIA Caffe's
// fields ask for, the Cast layers where types change, and values rounded to 16 bits wherever a blob
// is stored in 16 bits, forward and backward, checked against the float net rounded by hand (the
// convolution there is engine CAFFE: computed in float between Casts); and the bf16 convolution that
// oneDNN computes itself, against a convolution of the bf16 values in double.
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

}  // namespace cortado::test
