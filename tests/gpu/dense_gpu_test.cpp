// dense_gpu_test.cpp — the dense layers on the GPU against their CPU code: InnerProduct, Softmax,
// SoftmaxWithLoss, Accuracy, Pooling (forward bit for bit) and Convolution (im2col engine and cuDNN),
// in the configurations that take different paths; parameter gradients accumulate; a label out of
// range is the CPU's one-line Error.
#include <cmath>

#include "cortado/error.hpp"
#include "cortado/kernels/dense.hpp"
#include "gpu_compare.hpp"

namespace cortado::test {

namespace {

const std::string kFillers =
    " weight_filler { type: 'gaussian' std: 0.5 } bias_filler { type: 'gaussian' std: 0.5 } ";

GpuCompareOptions Tolerance(float tolerance) {
  GpuCompareOptions o;
  o.tolerance = tolerance;
  return o;
}

GpuCompareOptions Labels(int bottom, int classes) {
  GpuCompareOptions o;
  o.label_bottoms = {{bottom, classes}};
  return o;
}

GpuCompareOptions ForwardOnly(GpuCompareOptions o) {
  o.check_backward = false;
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

TEST(DenseGpu, InnerProductMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  const std::string ip = "type: 'InnerProduct' inner_product_param { num_output: 6 " + kFillers;
  ExpectGpuMatchesCpu(ip + "}", {{4, 3, 5}});
  ExpectGpuMatchesCpu(ip + "axis: 2 }", {{2, 3, 4, 5}});
  ExpectGpuMatchesCpu(ip + "transpose: true }", {{4, 3, 5}});
  ExpectGpuMatchesCpu(ip + "bias_term: false }", {{4, 3, 5}});
  ExpectGpuMatchesCpu(ip + "axis: -1 transpose: true bias_term: false }", {{2, 3, 7}});
  ExpectGpuMatchesCpu(ip + "}", {{1, 17}});  // a single row
  GpuCompareOptions tf32;  // cuBLAS in TF32 (where the GPU has it), compared in norm
  tf32.tf32 = true;
  ExpectGpuMatchesCpu(ip + "}", {{4, 3, 5}}, 1, tf32);
  ExpectGpuMatchesCpu("type: 'InnerProduct' inner_product_param { num_output: 96" + kFillers + "}", {{64, 300}}, 1,
                      tf32);
}

TEST(DenseGpu, InnerProductAccumulatesParameterGradients) {
  SKIP_WITHOUT_GPU();
  ExpectParamDiffsAccumulate("type: 'InnerProduct' inner_product_param { num_output: 4 " + kFillers + "}", {3, 5});
  ExpectParamDiffsAccumulate(
      "type: 'InnerProduct' inner_product_param { num_output: 4 transpose: true " + kFillers + "}", {3, 5});
}

// ---- Softmax -----------------------------------------------------------------------------------------

TEST(DenseGpu, SoftmaxMatchesTheCpuOnEveryAxis) {
  SKIP_WITHOUT_GPU();
  ExpectGpuMatchesCpu("type: 'Softmax'", {{2, 5, 3, 4}});                            // axis 1, warp per position
  ExpectGpuMatchesCpu("type: 'Softmax' softmax_param { axis: 2 }", {{2, 3, 4, 5}});  // axis 2
  ExpectGpuMatchesCpu("type: 'Softmax' softmax_param { axis: -1 }", {{2, 3, 4, 5}});
  ExpectGpuMatchesCpu("type: 'Softmax'", {{2, 3, 8, 8}});  // inner 64: thread per position
  ExpectGpuMatchesCpu("type: 'Softmax'", {{8, 100}});      // more classes than a warp's lanes
  GpuCompareOptions large;
  large.input_std = 20.0f;  // exp would overflow without the max subtracted
  ExpectGpuMatchesCpu("type: 'Softmax'", {{4, 10}}, 1, large);
}

// ---- SoftmaxWithLoss ---------------------------------------------------------------------------------

TEST(DenseGpu, SoftmaxWithLossMatchesTheCpuInEveryNormalization) {
  SKIP_WITHOUT_GPU();
  for (const char* mode : {"FULL", "VALID", "BATCH_SIZE", "NONE"}) {
    const std::string norm = std::string("normalization: ") + mode;
    SCOPED_TRACE(norm);
    ExpectGpuMatchesCpu("type: 'SoftmaxWithLoss' loss_param { " + norm + " }", {{6, 5}, {6}}, 1, Labels(1, 5));
    ExpectGpuMatchesCpu("type: 'SoftmaxWithLoss' loss_param { " + norm + " ignore_label: 2 }",
                        {{2, 5, 3, 4}, {2, 3, 4}}, 1, Labels(1, 5));
  }
  ExpectGpuMatchesCpu("type: 'SoftmaxWithLoss' loss_param { normalize: false }", {{6, 5}, {6}}, 1, Labels(1, 5));
}

TEST(DenseGpu, SoftmaxWithLossMatchesTheCpuWithAxisWeightAndProbabilityTop) {
  SKIP_WITHOUT_GPU();
  ExpectGpuMatchesCpu("type: 'SoftmaxWithLoss' softmax_param { axis: 2 } loss_weight: 2",
                      {{2, 3, 4, 5}, {2, 3, 5}}, 1, Labels(1, 4));
  ExpectGpuMatchesCpu("type: 'SoftmaxWithLoss' loss_param { ignore_label: 0 }", {{6, 5}, {6}}, 2, Labels(1, 5));
  // Every label ignored: the VALID normalizer is clamped to 1 and the loss is 0.
  ExpectGpuMatchesCpu("type: 'SoftmaxWithLoss' loss_param { ignore_label: 0 }", {{6, 5}, {6}}, 1, Labels(1, 1));
  // More positions than the loss kernel's threads: every block's partial sum counts.
  ExpectGpuMatchesCpu("type: 'SoftmaxWithLoss'", {{4, 10, 96, 96}, {4, 96, 96}}, 1, Labels(1, 10));
}

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

// ---- Accuracy ----------------------------------------------------------------------------------------

TEST(DenseGpu, AccuracyMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  for (int k : {1, 3}) {
    const std::string acc = "type: 'Accuracy' accuracy_param { top_k: " + std::to_string(k);
    SCOPED_TRACE(acc);
    ExpectGpuMatchesCpu(acc + " }", {{50, 10}, {50}}, 1, ForwardOnly(Labels(1, 10)));
    ExpectGpuMatchesCpu(acc + " ignore_label: 3 }", {{50, 10}, {50}}, 2, ForwardOnly(Labels(1, 10)));
    ExpectGpuMatchesCpu(acc + " axis: 1 }", {{2, 6, 3, 5}, {2, 3, 5}}, 2, ForwardOnly(Labels(1, 6)));
    // Integer scores in [0, 3): many ties, which count against the prediction on both devices.
    GpuCompareOptions ties = ForwardOnly(Labels(1, 10));
    ties.label_bottoms.push_back({0, 3});
    ExpectGpuMatchesCpu(acc + " }", {{64, 10}, {64}}, 2, ties);
  }
}

// ---- Pooling -----------------------------------------------------------------------------------------

TEST(DenseGpu, PoolingMatchesTheCpuBitForBitInForward) {
  SKIP_WITHOUT_GPU();
  const std::vector<std::string> windows = {
      "kernel_size: 3 stride: 2 pad: 1",                            // padded, CEIL
      "kernel_size: 3 stride: 2 pad: 1 round_mode: FLOOR",          // padded, FLOOR
      "kernel_size: 3 stride: 3",                                   // CEIL: a clipped last window
      "kernel_size: 2 stride: 2",                                   // the CPU's 2×2 path
      "kernel_h: 2 kernel_w: 3 stride_h: 1 stride_w: 2 pad_h: 1 pad_w: 0",
      "kernel_size: 1 stride: 3",                                   // CEIL leaves an empty window
      "global_pooling: true",
  };
  for (const std::string& pool : {std::string("MAX"), std::string("AVE")}) {
    for (const std::string& w : windows) {
      const std::string layer = "type: 'Pooling' pooling_param { pool: " + pool + " " + w + " }";
      SCOPED_TRACE(layer);
      ExpectGpuMatchesCpu(layer, {{2, 3, 7, 9}}, 1, ForwardOnly(Tolerance(0.0f)));
      ExpectGpuMatchesCpu(layer, {{2, 3, 7, 9}}, 1, Tolerance(1e-5f));
    }
  }
  // The argmax top, with ties (integer inputs): the first maximum in row-major order on both.
  GpuCompareOptions ties = ForwardOnly(Labels(0, 3));
  ties.tolerance = 0.0f;
  ExpectGpuMatchesCpu("type: 'Pooling' pooling_param { pool: MAX kernel_size: 3 stride: 2 pad: 1 }", {{2, 3, 7, 9}},
                      2, ties);
  ExpectGpuMatchesCpu("type: 'Pooling' pooling_param { pool: MAX kernel_size: 3 stride: 2 }", {{2, 3, 7, 9}}, 2,
                      Tolerance(1e-5f));
}

// ---- Convolution -------------------------------------------------------------------------------------

namespace {

// The same shapes through one engine (TF32 allowed: compared in norm, gpu_compare.hpp).
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

TEST(DenseGpu, ConvolutionIm2colEngineMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  ExpectConvolutionMatchesTheCpu("CAFFE", 1e-4f);
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
