// channels_last_test.cpp — NHWC nets (NetParameter.layout, net_precision.cpp): the layers that compute
// channels-last do (Convolution through oneDNN's nhwc code on the CPU and cuDNN's on the GPU,
// BatchNorm, Scale, element-wise layers), Casts transpose where a reader wants NCHW, and an NHWC net
// trains the weights the NCHW net trains, within float rounding, on either device and in 16 bits. The
// weights files are the same layout either way.
#include <cmath>
#include <cstdio>

#include "cortado/cpu_engine.hpp"
#include "cortado/io.hpp"
#include "cortado/solver.hpp"
#include "gpu/gpu_compare.hpp"  // SKIP_WITHOUT_GPU
#include "test_util.hpp"

namespace cortado::test {

namespace {

const char* kNet = R"(
layer { name: "in" type: "Input" top: "data" top: "label"
        input_param { shape { dim: 4 dim: 3 dim: 8 dim: 8 } shape { dim: 4 } } }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
        convolution_param { num_output: 6 kernel_size: 3 pad: 1 weight_filler { type: "msra" } } }
layer { name: "bn1" type: "BatchNorm" bottom: "conv1" top: "conv1" }
layer { name: "scale1" type: "Scale" bottom: "conv1" top: "conv1" scale_param { bias_term: true } }
layer { name: "relu1" type: "ReLU" bottom: "conv1" top: "conv1" }
layer { name: "conv2" type: "Convolution" bottom: "conv1" top: "conv2"
        convolution_param { num_output: 5 kernel_size: 3 stride: 2 bias_term: false weight_filler { type: "msra" } } }
layer { name: "bn2" type: "BatchNorm" bottom: "conv2" top: "conv2" batch_norm_param { scale_bias: true } }
layer { name: "relu2" type: "ReLU" bottom: "conv2" top: "conv2" }
layer { name: "pool" type: "Pooling" bottom: "conv2" top: "pool" pooling_param { pool: AVE kernel_size: 3 } }
layer { name: "ip" type: "InnerProduct" bottom: "pool" top: "ip"
        inner_product_param { num_output: 3 weight_filler { type: "xavier" } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
)";

void FillInputs(Net* net) {
  std::mt19937 rng(9);
  FillGaussian(net->blob_by_name("data"), rng);
  net->blob_by_name("label")->WriteData({0, 2, 1, 2});
}

}  // namespace

TEST(ChannelsLast, CastTransposesBothWaysAndConvertsTypes) {
  NetParameter param = ParseNet(R"(
layer { name: "in" type: "Input" top: "x" input_param { shape { dim: 2 dim: 3 dim: 4 dim: 5 } } }
layer { name: "cast" type: "Cast" bottom: "x" top: "y" layout: NHWC forward_type: BFLOAT16 backward_type: FLOAT16 }
)");
  param.set_force_backward(true);
  Context ctx(Device::kCPU, 1);
  Net net(param, ctx);
  net.AllocateOwnArena();
  Blob& x = *net.blob_by_name("x");
  Blob& y = *net.blob_by_name("y");
  ASSERT_TRUE(y.channels_last());
  std::mt19937 rng(1);
  FillGaussian(&x, rng);
  net.Forward();
  std::vector<float> dy(y.count());
  for (size_t i = 0; i < dy.size(); ++i) dy[i] = 0.001f * static_cast<float>(i) - 0.05f;
  y.WriteDiff(dy);  // in y's memory order: NHWC
  net.Backward();
  const std::vector<float> xs = x.ReadData(), ys = y.ReadData(), dx = x.ReadDiff(), dys = y.ReadDiff();
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 3; ++c)
      for (int s = 0; s < 20; ++s) {
        const int nchw = (n * 3 + c) * 20 + s, nhwc = (n * 20 + s) * 3 + c;
        ASSERT_EQ(ys[nhwc], RoundedTo(DataType::kBFloat16, xs[nchw]));
        ASSERT_EQ(dx[nchw], dys[nhwc]);  // the fp16 diff, back in NCHW order
      }
}

TEST(ChannelsLast, NhwcNetComputesChannelsLastWhereItCanAndCastsElsewhere) {
  if (!OneDnnEnabled()) GTEST_SKIP() << "channels-last convolutions on the CPU need oneDNN (libdnnl-dev)";
  NetParameter param = ParseNet(std::string("layout: NHWC\n") + kNet);
  param.mutable_state()->set_phase(TRAIN);
  Context ctx(Device::kCPU, 1);
  Net net(param, ctx);
  for (const char* blob : {"conv1", "conv2"}) EXPECT_TRUE(net.blob_by_name(blob)->channels_last()) << blob;
  for (const char* blob : {"data", "pool", "ip"}) EXPECT_FALSE(net.blob_by_name(blob)->channels_last()) << blob;
  EXPECT_STREQ(net.layer_by_name("conv1")->chosen_engine(), "onednn_nhwc");
  // data → NHWC before conv1, conv2 → NCHW before the pooling: the chains between run channels-last.
  EXPECT_EQ(CountLayers(net, "Cast"), 2);
  Net plain(ParseNet(kNet), ctx);
  EXPECT_EQ(CountLayers(plain, "Cast"), 0);
}

// Ten SGD steps with momentum from the same weights and inputs, on `mode`'s device: the weights
// (the solver's flat parameter array) and the net as a weights file would hold it.
std::pair<std::vector<float>, NetParameter> TrainTenSteps(Packing layout, Type precision,
                                                          SolverParameter::SolverMode mode = SolverParameter::CPU) {
  SolverParameter param;
  ReadProtoFromTextString("base_lr: 0.05 momentum: 0.9 weight_decay: 0.001 lr_policy: 'fixed' display: 0 "
                          "random_seed: 4 snapshot_after_train: false",
                          &param);
  ReadProtoFromTextString(kNet, param.mutable_net_param());
  param.set_solver_mode(mode);
  param.set_layout(layout);
  param.set_precision(precision);
  param.set_snapshot_prefix(TempDir() + "/layout");
  Solver solver(param);
  FillInputs(solver.net());
  const float first = solver.net()->Forward();
  solver.Step(10);
  const float last = solver.net()->Forward();
  EXPECT_LT(last, first);
  NetParameter weights;
  solver.net()->ToProto(&weights);
  std::vector<float> values;
  for (const Blob* p : solver.net()->learnable_params()) {
    const std::vector<float> v = p->ReadData();
    values.insert(values.end(), v.begin(), v.end());
  }
  return {values, weights};
}

// The largest difference between two runs' weights, relative to max(1, |a|).
double LargestRelativeDifference(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    worst = std::max(worst, std::fabs(double(b[i]) - a[i]) / std::max(1.0, std::fabs(double(a[i]))));
  return worst;
}

// Every weight the same within float rounding (the sums run in other orders), and the .caffemodel
// blobs in the same (Caffe's) layout.
TEST(ChannelsLast, NhwcAndNchwTrainTheSameWeights) {
  if (!OneDnnEnabled()) GTEST_SKIP() << "channels-last convolutions on the CPU need oneDNN (libdnnl-dev)";
  const auto [nchw, nchw_model] = TrainTenSteps(NCHW, FLOAT);
  const auto [nhwc, nhwc_model] = TrainTenSteps(NHWC, FLOAT);
  const double worst = LargestRelativeDifference(nchw, nhwc);
  std::printf("NHWC against NCHW after 10 steps: largest relative weight difference %.3g\n", worst);
  EXPECT_LT(worst, 1e-4);
  EXPECT_NE(nhwc, nchw);  // not the same code: a test that could not tell them apart would prove nothing
  // Blob by blob, the weights files hold the same shapes and values.
  int compared = 0;
  for (const LayerParameter& a : nchw_model.layer())
    for (const LayerParameter& b : nhwc_model.layer())
      if (a.name() == b.name() && a.blobs_size() > 0) {
        ASSERT_EQ(a.blobs_size(), b.blobs_size()) << a.name();
        for (int k = 0; k < a.blobs_size(); ++k) {
          ASSERT_EQ(a.blobs(k).shape().DebugString(), b.blobs(k).shape().DebugString()) << a.name();
          for (int i = 0; i < a.blobs(k).data_size(); ++i)
            ASSERT_NEAR(a.blobs(k).data(i), b.blobs(k).data(i), 1e-4 * std::max(1.0f, std::fabs(a.blobs(k).data(i))));
          ++compared;
        }
      }
  EXPECT_GE(compared, 10);
  // bf16 and NHWC together: the bf16 NCHW net's weights within bf16 rounding.
  EXPECT_LT(LargestRelativeDifference(TrainTenSteps(NCHW, BFLOAT16).first, TrainTenSteps(NHWC, BFLOAT16).first), 0.02);
}

// On the GPU, cuDNN computes the convolutions channels-last and in 16 bits, and BatchNorm (scale_bias
// too), Scale, ReLU and the pooling run on the convolutions' NHWC 16-bit tops as they are: no Cast
// reads or writes conv1's or conv2's blobs (the Casts left convert the image, the pooling's output for
// the inner product, and the inner product's for the loss).
TEST(ChannelsLastGpu, CudnnComputesChannelsLastIn16BitsWithoutCastsAroundTheChannelLayers) {
  SKIP_WITHOUT_GPU();
  for (Type precision : {FLOAT, BFLOAT16, FLOAT16}) {
    NetParameter param = ParseNet(std::string("layout: NHWC\n") + kNet);
    param.mutable_state()->set_phase(TRAIN);
    if (precision != FLOAT) SetNetPrecision(&param, precision);
    Context ctx(Device::kGPU, 1);
    Net net(param, ctx);
    const std::string type = precision == FLOAT ? "" : precision == BFLOAT16 ? "_bf16" : "_fp16";
    EXPECT_EQ(net.layer_by_name("conv1")->chosen_engine(), "cudnn" + type + "_nhwc") << Type_Name(precision);
    for (const char* blob : {"conv1", "conv2", "pool"}) EXPECT_TRUE(net.blob_by_name(blob)->channels_last()) << blob;
    for (const auto& layer : net.layers()) {
      if (std::string(layer->type()) != "Cast") continue;
      for (const std::string& name : {layer->layer_param().bottom(0), layer->layer_param().top(0)})
        EXPECT_TRUE(name.rfind("conv", 0) != 0) << Type_Name(precision) << ": " << layer->name();
    }
  }
}

// Ten steps on the GPU in NHWC against the CPU in NCHW: float within TF32's rounding, bf16 and fp16
// within their own (the CPU computes the convolutions in float between Casts, or in oneDNN's bf16).
TEST(ChannelsLastGpu, NhwcOnTheGpuTrainsTheCpusNchwWeights) {
  SKIP_WITHOUT_GPU();
  const double fp32 = LargestRelativeDifference(TrainTenSteps(NCHW, FLOAT).first,
                                                TrainTenSteps(NHWC, FLOAT, SolverParameter::GPU).first);
  EXPECT_LT(fp32, 5e-3);
  for (Type precision : {BFLOAT16, FLOAT16}) {
    const double worst = LargestRelativeDifference(TrainTenSteps(NCHW, precision).first,
                                                   TrainTenSteps(NHWC, precision, SolverParameter::GPU).first);
    std::printf("%s: GPU NHWC against CPU NCHW after 10 steps: largest relative weight difference %.3g\n",
                Type_Name(precision).c_str(), worst);
    EXPECT_LT(worst, 0.02) << Type_Name(precision);
  }
}

}  // namespace cortado::test
