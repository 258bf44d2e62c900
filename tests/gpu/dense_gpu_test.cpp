// dense_gpu_test.cpp — the dense layers on the GPU beyond the plain CPU-against-GPU comparisons of
// InnerProduct, Softmax, SoftmaxWithLoss, Accuracy, Pooling and Convolution's im2col engine (rows of
// layer_table_gpu_test.cpp): Convolution through cuDNN (engines CUDNN and DEFAULT, strict FP32 and
// TF32) and its error without cuDNN; InnerProduct's and Convolution's parameter gradients accumulate;
// InnerProduct's ones vector lasts across passes and batch sizes; a label out of range is the CPU's
// one-line Error.
#include <algorithm>
#include <cmath>

#include "cortado/error.hpp"
#include "cortado/net.hpp"
#include "gpu_compare.hpp"
#include "layers/convolution_gpu.hpp"  // BuiltWithCudnn

namespace cortado::test {

namespace {

const std::string kFillers =
    " weight_filler { type: 'gaussian' std: 0.5 } bias_filler { type: 'gaussian' std: 0.5 } ";

GpuCompareOptions Tolerance(float tolerance) {
  GpuCompareOptions o;
  o.tolerance = tolerance;
  return o;
}

// Runs Backward twice on the GPU without zeroing in between: every parameter gradient must double.
void ExpectParamDiffsAccumulate(const std::string& layer_text, const std::vector<int>& bottom_shape) {
  LayerFixture f(layer_text, {bottom_shape}, 1, 7, Device::kGPU);
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(f.bottom(0).count())), dy(static_cast<size_t>(f.top(0).count()));
  for (float& v : x) v = normal(rng);
  for (float& v : dy) v = normal(rng);
  f.bottom(0).WriteData(x);
  f.Forward();
  f.top(0).WriteDiff(dy);
  f.Backward();  // zeroes the parameter gradients first
  f.ctx().Synchronize();
  std::vector<std::vector<float>> once;
  for (auto& p : f.layer().blobs()) once.push_back(p->ReadDiff());
  f.layer().Backward(f.top(), {true}, f.bottom());
  f.ctx().Synchronize();
  for (size_t p = 0; p < once.size(); ++p) {
    std::vector<float> twice = once[p];
    for (float& v : twice) v *= 2;
    ExpectNear(f.layer().blobs()[p]->ReadDiff(), twice, 1e-5f, layer_text + " parameter diff " + std::to_string(p));
  }
}

// The Error a forward pass with these labels throws on `device`.
std::string LabelError(const std::string& layer_text, const std::vector<float>& labels, Device device) {
  LayerFixture f(layer_text, {{static_cast<int>(labels.size()), 5}, {static_cast<int>(labels.size())}}, 1, 3, device);
  std::vector<float> scores(static_cast<size_t>(f.bottom(0).count()), 0.5f);
  f.bottom(0).WriteData(scores);
  f.bottom(1).WriteData(labels);
  return ErrorOf([&] { f.Forward(); });
}

}  // namespace

// ---- InnerProduct ----------------------------------------------------------------------------------

TEST(DenseGpu, InnerProductAccumulatesParameterGradients) {
  SKIP_WITHOUT_GPU();
  ExpectParamDiffsAccumulate("type: 'InnerProduct' inner_product_param { num_output: 4 " + kFillers + "}", {3, 5});
  ExpectParamDiffsAccumulate(
      "type: 'InnerProduct' inner_product_param { num_output: 4 transpose: true " + kFillers + "}", {3, 5});
}

// The bias goes in through a vector of ones that the GPU layer fills at its first pass and keeps, in
// memory of its own: over passes of a net with memory reuse, with a Filter ahead changing the batch M
// every pass (past what the vector held, and back), outputs and bias gradients stay the CPU's.
TEST(DenseGpu, InnerProductKeepsItsOnesAcrossPassesAndBatchSizes) {
  SKIP_WITHOUT_GPU();
  NetParameter param = ParseNet(R"(
layer { name: "in" type: "DummyData" top: "x" top: "s" top: "y"
        dummy_data_param { data_filler { type: "gaussian" } shape { dim: 16 dim: 5 } shape { dim: 16 }
                           shape { dim: 16 dim: 3 } } }
layer { name: "pick" type: "Threshold" bottom: "s" top: "keep" }
layer { name: "filter" type: "Filter" bottom: "x" bottom: "y" bottom: "keep" top: "fx" top: "fy" }
layer { name: "ip" type: "InnerProduct" bottom: "fx" top: "z"
        inner_product_param { num_output: 3 weight_filler { type: "gaussian" std: 0.5 }
                              bias_filler { type: "gaussian" std: 0.5 } } }
layer { name: "loss" type: "EuclideanLoss" bottom: "z" bottom: "fy" top: "loss" }
)");
  param.mutable_state()->set_phase(TRAIN);
  Context cpu_ctx(Device::kCPU, 9), gpu_ctx(Device::kGPU, 9);
  gpu_ctx.SetGpuSettings(StrictFp32());
  Net cpu(param, cpu_ctx, "cpu.prototxt"), gpu(param, gpu_ctx, "gpu.prototxt");
  for (Net* net : {&cpu, &gpu}) {
    net->KeepReadable({"z"});
    net->AllocateOwnArena();
  }
  NetParameter weights;
  cpu.ToProto(&weights);
  gpu.CopyTrainedLayersFrom(weights);
  std::vector<int> rows;
  for (int pass = 0; pass < 8; ++pass) {
    const std::string when = "pass " + std::to_string(pass);
    for (Net* net : {&cpu, &gpu}) {
      net->ClearParamDiffs();
      net->Forward();
      net->Backward();
    }
    gpu_ctx.Synchronize();
    rows.push_back(gpu.blob_by_name("z")->num());
    ASSERT_EQ(rows.back(), cpu.blob_by_name("z")->num()) << when;
    ExpectNear(gpu.blob_by_name("z")->ReadData(), cpu.blob_by_name("z")->ReadData(), 1e-4f, "z, " + when);
    ExpectNear(gpu.layer_by_name("ip")->blobs()[1]->ReadDiff(), cpu.layer_by_name("ip")->blobs()[1]->ReadDiff(),
               1e-4f, "the bias gradient, " + when);
  }
  EXPECT_GT(*std::max_element(rows.begin() + 1, rows.end()), rows[0]) << "M never grew past the first pass's";
  EXPECT_LT(*std::min_element(rows.begin() + 1, rows.end()), *std::max_element(rows.begin(), rows.end()));
}

// ---- SoftmaxWithLoss and Accuracy labels -------------------------------------------------------------

TEST(DenseGpu, LabelOutOfRangeIsTheCpusOneLineError) {
  SKIP_WITHOUT_GPU();
  for (const std::string& layer :
       {std::string("name: 'loss' type: 'SoftmaxWithLoss'"),
        std::string("name: 'loss' type: 'SoftmaxWithLoss' loss_param { ignore_label: -1 }"),
        std::string("name: 'acc' type: 'Accuracy'"),
        std::string("name: 'acc' type: 'Accuracy' accuracy_param { ignore_label: -1 }")}) {
    SCOPED_TRACE(layer);
    // The first bad label, in order, is reported: position 1 (7), not 3 (9); −1 is ignored or bad.
    const std::vector<float> labels = {1, 7, -1, 9, 2};
    const std::string gpu = LabelError(layer, labels, Device::kGPU);
    EXPECT_EQ(gpu, LabelError(layer, labels, Device::kCPU));
    EXPECT_EQ(gpu.find('\n'), std::string::npos) << gpu;
    EXPECT_NE(gpu.find(layer.find("Accuracy") == std::string::npos ? "layer loss (SoftmaxWithLoss)"
                                                                    : "layer acc (Accuracy)"),
              std::string::npos)
        << gpu;
    EXPECT_NE(gpu.find("label 7 (at position 1)"), std::string::npos) << gpu;
  }
  // Negative labels (without ignore_label) are out of range too, and the flag is reset each pass.
  LayerFixture f("type: 'SoftmaxWithLoss'", {{3, 5}, {3}}, 1, 3, Device::kGPU);
  f.bottom(0).WriteData(std::vector<float>(15, 0.0f));
  f.bottom(1).WriteData({0, -2, 1});
  EXPECT_NE(ErrorOf([&] { f.Forward(); }).find("label -2 (at position 1)"), std::string::npos);
  f.bottom(1).WriteData({0, 4, 1});
  EXPECT_NEAR(f.Forward(), std::log(5.0f), 1e-5f);  // uniform probabilities
}

// ---- Convolution -------------------------------------------------------------------------------------

namespace {

// The same shapes through one engine (TF32 allowed: compared in norm, gpu_compare.hpp); engine CAFFE's
// are rows of layer_table_gpu_test.cpp.
void ExpectConvolutionMatchesTheCpu(const std::string& engine, float tolerance, bool tf32 = false) {
  const std::string conv = "type: 'Convolution' convolution_param { engine: " + engine + kFillers;
  GpuCompareOptions o = Tolerance(tolerance);
  o.tf32 = tf32;
  ExpectGpuMatchesCpu(conv + "num_output: 6 group: 2 kernel_size: 3 dilation: 2 stride: 2 pad: 1 }", {{2, 4, 7, 8}},
                      1, o);
  ExpectGpuMatchesCpu(conv + "num_output: 6 group: 2 kernel_size: 3 dilation: 2 stride: 2 pad: 1 bias_term: false }",
                      {{2, 4, 7, 8}}, 1, o);
  ExpectGpuMatchesCpu(conv + "num_output: 5 kernel_h: 3 kernel_w: 2 pad_h: 1 pad_w: 0 stride_h: 1 stride_w: 2 }",
                      {{3, 3, 6, 5}}, 1, o);
  ExpectGpuMatchesCpu(conv + "num_output: 4 kernel_size: 1 }", {{2, 6, 5, 5}}, 1, o);
  ExpectGpuMatchesCpu(conv + "num_output: 8 group: 4 kernel_size: 3 pad: 1 }", {{2, 8, 6, 6}}, 1, o);  // depthwise-ish
  // Two bottoms sharing the weights: both tops, and the gradients of both summed.
  ExpectGpuMatchesCpu(conv + "num_output: 3 kernel_size: 3 stride: 2 pad: 1 }", {{2, 2, 5, 6}, {2, 2, 5, 6}}, 2, o);
}

}  // namespace

// The im2col engine's comparisons with the CPU are rows of layer_table_gpu_test.cpp.
TEST(DenseGpu, ConvolutionIm2colEngineAccumulatesParameterGradients) {
  SKIP_WITHOUT_GPU();
  ExpectParamDiffsAccumulate("type: 'Convolution' convolution_param { engine: CAFFE num_output: 4 group: 2 "
                             "kernel_size: 3 pad: 1" + kFillers + "}",
                             {2, 4, 5, 5});
}

// In strict FP32 cuDNN runs only CUDNN_FMA_MATH algorithms (cudnn_choice.hpp), so only the
// algorithms' own rounding (Winograd, FFT) separates it from the CPU: 1e-3. With TF32 (the default on
// sm_80+) the results are compared in norm; larger shapes make every pass a sum of many products.
TEST(DenseGpu, ConvolutionCudnnEngineMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  if (!BuiltWithCudnn()) {
    EXPECT_NE(ErrorOf([] {
                LayerFixture("type: 'Convolution' convolution_param { engine: CUDNN num_output: 2 kernel_size: 3 }",
                             {{1, 1, 5, 5}}, 1, 1, Device::kGPU);
              }).find("no cuDNN"),
              std::string::npos);
    GTEST_SKIP() << "this build has no cuDNN";
  }
  ExpectConvolutionMatchesTheCpu("CUDNN", 1e-3f);
  ExpectConvolutionMatchesTheCpu("DEFAULT", 1e-3f);
  ExpectConvolutionMatchesTheCpu("CUDNN", 1e-3f, /*tf32=*/true);
  GpuCompareOptions tf32;
  tf32.tf32 = true;
  ExpectGpuMatchesCpu("type: 'Convolution' convolution_param { num_output: 64 kernel_size: 3 pad: 1" + kFillers + "}",
                      {{8, 32, 14, 14}}, 1, tf32);
  ExpectParamDiffsAccumulate("type: 'Convolution' convolution_param { engine: CUDNN num_output: 4 group: 2 "
                             "kernel_size: 3 pad: 1" + kFillers + "}",
                             {2, 4, 5, 5});
}

}  // namespace cortado::test
