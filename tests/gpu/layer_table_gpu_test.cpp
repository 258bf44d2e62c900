// layer_table_gpu_test.cpp — one table of layer configurations over every registered layer type (as
// ggml's test-backend-ops): each row is a type, a layer's prototxt text, bottom shapes, a number of
// tops and the comparison's options (tolerance, input deviation, label bottoms, forward only, TF32).
// The rule: every type in LayerRegistry::Types() has a row or a named reason why it has none (kNoRow),
// and every row or reason names a registered type. The rows are the plain CPU-against-GPU comparisons
// the family tests (activation_gpu_test.cpp, dense_gpu_test.cpp, ...) made; those files keep what
// checks something else (in place, masks, seeding, hand-computed values, errors, allocation, ...).
//
// LayerTable.EveryRegisteredTypeHasARowOrAReason and LayerTable.EveryRowRunsOnTheCpu (each row set
// up, run forward and backward on the CPU, every top and gradient finite; and InBf16, each row in a
// bf16 net) run everywhere, CI included; LayerTableGpu.EveryRowMatchesTheCpu and
// LayerTableGpuBf16.EveryRowMatchesTheCpu (one instance per type, each of its rows compared, in float
// and in bf16 nets) need a GPU and are skipped, by name, without one.
#include <cmath>
#include <exception>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cortado/gpu.hpp"  // BuiltWithCuda
#include "cortado/layer_registry.hpp"
#include "gpu_compare.hpp"

namespace cortado::test {

namespace {

using Shapes = std::vector<std::vector<int>>;

struct Row {
  std::string type;  // the registered type the row tests (the type in `layer`)
  std::string layer;
  Shapes bottoms;
  int tops = 1;
  GpuCompareOptions options;
};

class RowList {
 public:
  void Add(const std::string& type, const std::string& layer, const Shapes& bottoms, int tops = 1,
           const GpuCompareOptions& options = {}) {
    rows_.push_back({type, layer, bottoms, tops, options});
  }
  const std::vector<Row>& rows() const { return rows_; }

 private:
  std::vector<Row> rows_;
};

// The types without a row, and why. ("Python" registers only in the Python module, python_layer.cpp,
// not in this binary, so it needs neither.)
struct NoRow {
  const char* type;
  const char* reason;
};
constexpr NoRow kNoRow[] = {
    {"Data", "reads an LMDB or LevelDB and has no bottoms to fill: its GPU batches are compared with the CPU's by "
             "DataGpu.DataLayerBatchesEqualTheCpus and BatchUploadGpu.DataBatchesQueuedWithoutWaitingEqualTheCpus"},
    {"HDF5Data", "reads HDF5 files: BatchUploadGpu.Hdf5DataBatchesQueuedWithoutWaitingEqualTheCpus"},
    {"ImageData", "reads image files through the prefetch pipeline whose GPU upload the Data tests above cover; "
                  "its own tests decode images with OpenCV, which the GPU build lacks"},
    {"WindowData", "reads a window file and images: WindowDataGpu.GpuNetGivesTheCpusBatchesForTheSameSeed"},
    {"MemoryData", "serves arrays a caller hands it with Reset, which a row cannot: "
                   "MemoryDataGpu.BatchesLossAndBatchSizeChangesMatchTheCpu"},
    {"HDF5Output", "writes its bottoms to a file and has no tops: Im2colHdf5OutputGpu.Hdf5OutputWritesTheSameFile "
                   "compares the files"},
    {"Parameter", "the family tests had no plain comparison of it: ZooGpu.ParameterMatchesTheCpu compares its top "
                  "and its parameter diff accumulating over two Backward passes"},
    {"CaptureBreakerForTest", "not a layer of Cortado's: training_gpu_test.cpp registers it to break CUDA graph "
                              "capture on purpose"},
};

GpuCompareOptions Tolerance(float tolerance) {
  GpuCompareOptions o;
  o.tolerance = tolerance;
  return o;
}

GpuCompareOptions Wide(float input_std) {
  GpuCompareOptions o;
  o.input_std = input_std;
  return o;
}

GpuCompareOptions ForwardOnly(GpuCompareOptions o = {}) {
  o.check_backward = false;
  return o;
}

GpuCompareOptions Labels(int bottom, int classes) {
  GpuCompareOptions o;
  o.label_bottoms = {{bottom, classes}};
  return o;
}

GpuCompareOptions Tf32() {
  GpuCompareOptions o;
  o.tf32 = true;
  return o;
}

// ---- the rows, by the family file they came from -------------------------------------------------------

// Shapes whose channels split into several chunks of the GPU's channel sums (kernels/channel_sums.hpp):
// chunk boundaries inside an image, a thread's stride across images, spatial 1, the grid's full target
// (a shared PReLU slope sums the whole bottom as one channel).
const Shapes kChunkedShapes = {
    {8, 3, 67, 67},     // 9 chunks of 3991 values per channel, images of 4489
    {300, 5, 7, 7},     // 4 chunks; a thread's step of 256 values spans 5 images and 11 positions
    {20000, 3},         // 5 chunks, spatial 1
    {40, 5, 150, 150},  // 205 chunks: kChannelSumBlocks / channels, rounded up
};

// activation_gpu_test.cpp
void AddActivationRows(RowList* t) {
  t->Add("AbsVal", "type: 'AbsVal'", {{2, 3, 4, 5}});
  t->Add("AbsVal", "type: 'AbsVal'", {{100003}});  // more than one block, odd size
  t->Add("BNLL", "type: 'BNLL'", {{2, 3, 4, 5}});
  t->Add("BNLL", "type: 'BNLL'", {{5000}}, 1, Wide(30.0f));  // BNLL's large-|x| branches
  t->Add("Threshold", "type: 'Threshold'", {{2, 3, 4, 5}}, 1, ForwardOnly());
  t->Add("Threshold", "type: 'Threshold' threshold_param { threshold: 0.3 }", {{100003}}, 1, ForwardOnly());

  for (const char* text : {"type: 'Power'", "type: 'Power' power_param { power: 2 scale: 0.5 shift: -1 }",
                           "type: 'Power' power_param { power: 3 scale: 0.83 }",
                           "type: 'Power' power_param { power: 0.37 scale: 0.83 shift: 10 }",
                           "type: 'Power' power_param { power: -1.5 shift: 10 }",
                           "type: 'Power' power_param { scale: 2 shift: 1 }", "type: 'Power' power_param { power: 0 }",
                           "type: 'Power' power_param { power: 2 scale: 0 shift: 3 }"})
    t->Add("Power", text, {{2, 3, 4, 5}});
  for (const char* text : {"type: 'Exp'", "type: 'Exp' exp_param { base: 2 scale: 0.5 shift: 1 }",
                           "type: 'Exp' exp_param { base: 0.5 scale: -1 shift: 0.3 }"})
    t->Add("Exp", text, {{2, 3, 4, 5}});
  for (const char* text : {"type: 'Log' log_param { shift: 10 }",
                           "type: 'Log' log_param { base: 2 scale: 0.5 shift: 10 }",
                           "type: 'Log' log_param { base: 0.1 scale: -2 shift: 12 }"})
    t->Add("Log", text, {{2, 3, 4, 5}});
  t->Add("Power", "type: 'Power' power_param { power: 2 shift: 1 }", {{100003}});
  t->Add("Log", "type: 'Log' log_param { scale: 0.5 shift: 10 }", {{100003}});

  const std::pair<const char*, const char*> clip_elu_swish[] = {
      {"Clip", "type: 'Clip' clip_param { min: -1 max: 0.5 }"}, {"Clip", "type: 'Clip' clip_param { min: 0 max: 6 }"},
      {"ELU", "type: 'ELU'"},                                   {"ELU", "type: 'ELU' elu_param { alpha: 0.3 }"},
      {"Swish", "type: 'Swish'"},                               {"Swish", "type: 'Swish' swish_param { beta: 2.5 }"},
      {"Swish", "type: 'Swish' swish_param { beta: -0.5 }"}};
  for (const auto& [type, text] : clip_elu_swish) {
    t->Add(type, text, {{2, 3, 4, 5}});
    t->Add(type, text, {{1000}}, 1, Wide(4.0f));
  }
  t->Add("ELU", "type: 'ELU'", {{100003}});
  t->Add("Swish", "type: 'Swish'", {{100003}});

  for (const char* text : {"type: 'PReLU'", "type: 'PReLU' prelu_param { filler { type: 'gaussian' } }",
                           "type: 'PReLU' prelu_param { channel_shared: true filler { type: 'gaussian' } }"}) {
    t->Add("PReLU", text, {{2, 3, 4, 5}});
    t->Add("PReLU", text, {{4, 3}});           // no spatial axes: D = 1
    t->Add("PReLU", text, {{8, 16, 20, 20}});  // 3200 values per channel: many per thread
    t->Add("PReLU", text, {{2, 1000, 3}});     // many channels, few values each
  }
  for (const char* text : {"type: 'PReLU' prelu_param { filler { type: 'gaussian' } }",
                           "type: 'PReLU' prelu_param { channel_shared: true filler { type: 'gaussian' } }"})
    for (const std::vector<int>& shape : kChunkedShapes) t->Add("PReLU", text, {shape});
}

// neuron_gpu_test.cpp
void AddNeuronRows(RowList* t) {
  t->Add("ReLU", "type: 'ReLU'", {{2, 3, 4, 5}});
  t->Add("ReLU", "type: 'ReLU' relu_param { negative_slope: 0.1 }", {{3, 7, 11}});
  t->Add("ReLU", "type: 'ReLU'", {{100003}});  // more than one block, odd size
  t->Add("Sigmoid", "type: 'Sigmoid'", {{2, 3, 4, 5}});
  t->Add("Sigmoid", "type: 'Sigmoid'", {{1000}}, 1, Wide(4.0f));  // into the saturated tails
  t->Add("TanH", "type: 'TanH'", {{2, 3, 4, 5}});
  t->Add("TanH", "type: 'TanH'", {{1000}}, 1, Wide(4.0f));
  // TEST phase only: TRAIN draws a random mask (DropoutGpu's tests check it).
  t->Add("Dropout", "type: 'Dropout' phase: TEST", {{2, 3, 4}});
  t->Add("Dropout", "type: 'Dropout' phase: TEST dropout_param { dropout_ratio: 0.3 }", {{5, 17}});
  t->Add("EuclideanLoss", "type: 'EuclideanLoss'", {{4, 5}, {4, 5}});
  t->Add("EuclideanLoss", "type: 'EuclideanLoss' loss_weight: 3", {{3, 2, 2}, {3, 4}});
  t->Add("EuclideanLoss", "type: 'EuclideanLoss'", {{64, 3000}, {64, 3000}});  // many values per thread
}

const std::string kFillers = " weight_filler { type: 'gaussian' std: 0.5 } bias_filler { type: 'gaussian' std: 0.5 } ";

// dense_gpu_test.cpp
void AddDenseRows(RowList* t) {
  const std::string ip = "type: 'InnerProduct' inner_product_param { num_output: 6 " + kFillers;
  t->Add("InnerProduct", ip + "}", {{4, 3, 5}});
  t->Add("InnerProduct", ip + "axis: 2 }", {{2, 3, 4, 5}});
  t->Add("InnerProduct", ip + "transpose: true }", {{4, 3, 5}});
  t->Add("InnerProduct", ip + "bias_term: false }", {{4, 3, 5}});
  t->Add("InnerProduct", ip + "axis: -1 transpose: true bias_term: false }", {{2, 3, 7}});
  t->Add("InnerProduct", ip + "}", {{1, 17}});  // a single row
  // cuBLAS in TF32 (where the GPU has it), compared in norm.
  t->Add("InnerProduct", ip + "}", {{4, 3, 5}}, 1, Tf32());
  t->Add("InnerProduct", "type: 'InnerProduct' inner_product_param { num_output: 96" + kFillers + "}", {{64, 300}}, 1,
         Tf32());

  t->Add("Softmax", "type: 'Softmax'", {{2, 5, 3, 4}});                            // axis 1, warp per position
  t->Add("Softmax", "type: 'Softmax' softmax_param { axis: 2 }", {{2, 3, 4, 5}});  // axis 2
  t->Add("Softmax", "type: 'Softmax' softmax_param { axis: -1 }", {{2, 3, 4, 5}});
  t->Add("Softmax", "type: 'Softmax'", {{2, 3, 8, 8}});       // inner 64: thread per position
  t->Add("Softmax", "type: 'Softmax'", {{8, 100}});           // more classes than a warp's lanes
  t->Add("Softmax", "type: 'Softmax'", {{4, 10}}, 1, Wide(20.0f));  // exp would overflow without the max subtracted

  for (const char* mode : {"FULL", "VALID", "BATCH_SIZE", "NONE"}) {
    const std::string norm = std::string("normalization: ") + mode;
    t->Add("SoftmaxWithLoss", "type: 'SoftmaxWithLoss' loss_param { " + norm + " }", {{6, 5}, {6}}, 1, Labels(1, 5));
    t->Add("SoftmaxWithLoss", "type: 'SoftmaxWithLoss' loss_param { " + norm + " ignore_label: 2 }",
           {{2, 5, 3, 4}, {2, 3, 4}}, 1, Labels(1, 5));
  }
  t->Add("SoftmaxWithLoss", "type: 'SoftmaxWithLoss' loss_param { normalize: false }", {{6, 5}, {6}}, 1, Labels(1, 5));
  t->Add("SoftmaxWithLoss", "type: 'SoftmaxWithLoss' softmax_param { axis: 2 } loss_weight: 2",
         {{2, 3, 4, 5}, {2, 3, 5}}, 1, Labels(1, 4));
  t->Add("SoftmaxWithLoss", "type: 'SoftmaxWithLoss' loss_param { ignore_label: 0 }", {{6, 5}, {6}}, 2, Labels(1, 5));
  // Every label ignored: the VALID normalizer is clamped to 1 and the loss is 0.
  t->Add("SoftmaxWithLoss", "type: 'SoftmaxWithLoss' loss_param { ignore_label: 0 }", {{6, 5}, {6}}, 1, Labels(1, 1));
  // More positions than the loss kernel's threads: every block's partial sum counts.
  t->Add("SoftmaxWithLoss", "type: 'SoftmaxWithLoss'", {{4, 10, 96, 96}, {4, 96, 96}}, 1, Labels(1, 10));

  for (int k : {1, 3}) {
    const std::string acc = "type: 'Accuracy' accuracy_param { top_k: " + std::to_string(k);
    t->Add("Accuracy", acc + " }", {{50, 10}, {50}}, 1, ForwardOnly(Labels(1, 10)));
    t->Add("Accuracy", acc + " ignore_label: 3 }", {{50, 10}, {50}}, 2, ForwardOnly(Labels(1, 10)));
    t->Add("Accuracy", acc + " axis: 1 }", {{2, 6, 3, 5}, {2, 3, 5}}, 2, ForwardOnly(Labels(1, 6)));
    // Integer scores in [0, 3): many ties, which count against the prediction on both devices.
    GpuCompareOptions ties = ForwardOnly(Labels(1, 10));
    ties.label_bottoms.push_back({0, 3});
    t->Add("Accuracy", acc + " }", {{64, 10}, {64}}, 2, ties);
  }

  // Forward bit for bit (tolerance 0), then forward and backward within 1e-5.
  const char* const windows[] = {
      "kernel_size: 3 stride: 2 pad: 1",                    // padded, CEIL
      "kernel_size: 3 stride: 2 pad: 1 round_mode: FLOOR",  // padded, FLOOR
      "kernel_size: 3 stride: 3",                           // CEIL: a clipped last window
      "kernel_size: 2 stride: 2",                           // the CPU's 2×2 path
      "kernel_h: 2 kernel_w: 3 stride_h: 1 stride_w: 2 pad_h: 1 pad_w: 0",
      "kernel_size: 1 stride: 3",  // CEIL leaves an empty window
      "global_pooling: true",
  };
  for (const char* pool : {"MAX", "AVE"}) {
    for (const char* w : windows) {
      const std::string layer = std::string("type: 'Pooling' pooling_param { pool: ") + pool + " " + w + " }";
      t->Add("Pooling", layer, {{2, 3, 7, 9}}, 1, ForwardOnly(Tolerance(0.0f)));
      t->Add("Pooling", layer, {{2, 3, 7, 9}}, 1, Tolerance(1e-5f));
    }
  }
  // The argmax top, with ties (integer inputs): the first maximum in row-major order on both.
  GpuCompareOptions ties = ForwardOnly(Labels(0, 3));
  ties.tolerance = 0.0f;
  t->Add("Pooling", "type: 'Pooling' pooling_param { pool: MAX kernel_size: 3 stride: 2 pad: 1 }", {{2, 3, 7, 9}}, 2,
         ties);
  t->Add("Pooling", "type: 'Pooling' pooling_param { pool: MAX kernel_size: 3 stride: 2 }", {{2, 3, 7, 9}}, 2,
         Tolerance(1e-5f));

  // The im2col engine (engine CAFFE); cuDNN's stay in DenseGpu.ConvolutionCudnnEngineMatchesTheCpu.
  const std::string conv = "type: 'Convolution' convolution_param { engine: CAFFE" + kFillers;
  const GpuCompareOptions o = Tolerance(1e-4f);
  t->Add("Convolution", conv + "num_output: 6 group: 2 kernel_size: 3 dilation: 2 stride: 2 pad: 1 }", {{2, 4, 7, 8}},
         1, o);
  t->Add("Convolution", conv + "num_output: 6 group: 2 kernel_size: 3 dilation: 2 stride: 2 pad: 1 bias_term: false }",
         {{2, 4, 7, 8}}, 1, o);
  t->Add("Convolution", conv + "num_output: 5 kernel_h: 3 kernel_w: 2 pad_h: 1 pad_w: 0 stride_h: 1 stride_w: 2 }",
         {{3, 3, 6, 5}}, 1, o);
  t->Add("Convolution", conv + "num_output: 4 kernel_size: 1 }", {{2, 6, 5, 5}}, 1, o);
  t->Add("Convolution", conv + "num_output: 8 group: 4 kernel_size: 3 pad: 1 }", {{2, 8, 6, 6}}, 1,
         o);  // depthwise-ish
  // Two bottoms sharing the weights: both tops, and the gradients of both summed.
  t->Add("Convolution", conv + "num_output: 3 kernel_size: 3 stride: 2 pad: 1 }", {{2, 2, 5, 6}, {2, 2, 5, 6}}, 2, o);
}

// norm_gpu_test.cpp
void AddNormRows(RowList* t) {
  t->Add("LRN", "type: 'LRN' lrn_param { local_size: 5 alpha: 0.0001 beta: 0.75 }", {{2, 16, 7, 9}}, 1, Wide(3));
  t->Add("LRN", "type: 'LRN' lrn_param { local_size: 3 alpha: 2 beta: 0.6 k: 2 }", {{3, 4, 5, 5}});
  t->Add("LRN", "type: 'LRN' lrn_param { local_size: 3 alpha: 5e-05 beta: 0.75 norm_region: WITHIN_CHANNEL }",
         {{4, 8, 16, 16}}, 1, Wide(10));
  t->Add("LRN", "type: 'LRN' lrn_param { local_size: 5 alpha: 3 beta: 0.5 norm_region: WITHIN_CHANNEL }",
         {{2, 3, 6, 11}});
  t->Add("LRN", "type: 'LRN' lrn_param { local_size: 7 alpha: 1 beta: 0.75 norm_region: WITHIN_CHANNEL }",
         {{1, 2, 3, 4}});  // windows wider than the image

  t->Add("BatchNorm", "type: 'BatchNorm'", {{4, 5}});
  t->Add("BatchNorm", "type: 'BatchNorm'", {{3, 4, 5, 6}});
  t->Add("BatchNorm", "type: 'BatchNorm'", {{16, 3, 20, 20}});  // 6400 values per channel: many per thread
  t->Add("BatchNorm", "type: 'BatchNorm'", {{1000, 7}});
  t->Add("BatchNorm", "type: 'BatchNorm'", {{5}});  // 1-D: one channel
  const std::string scale_bias =
      "type: 'BatchNorm' batch_norm_param { scale_bias: true scale_filler { type: 'gaussian' mean: 1 std: 0.5 } "
      "bias_filler { type: 'gaussian' } }";
  t->Add("BatchNorm", scale_bias, {{4, 5}});
  t->Add("BatchNorm", scale_bias, {{3, 4, 5, 6}});
  t->Add("BatchNorm", scale_bias, {{16, 3, 20, 20}});
  t->Add("BatchNorm", "phase: TEST " + scale_bias, {{3, 4, 5, 6}});

  const std::string fillers = " filler { type: 'gaussian' } bias_filler { type: 'gaussian' } ";
  for (const char* params : {"", "bias_term: true", "axis: 0 num_axes: 2 bias_term: true", "axis: -1",
                             "num_axes: -1 bias_term: true", "num_axes: 0"})
    t->Add("Scale", std::string("type: 'Scale' scale_param { ") + params + fillers + "}", {{3, 4, 5, 6}});
  t->Add("Scale", "type: 'Scale' scale_param { bias_term: true" + fillers + "}", {{64, 8, 30, 30}});
  t->Add("Scale", "type: 'Scale'", {{3, 4, 5, 6}, {4, 5}});
  t->Add("Scale", "type: 'Scale' scale_param { bias_term: true" + fillers + "}", {{3, 4, 5, 6}, {4}});
  t->Add("Scale", "type: 'Scale' scale_param { axis: 0 }", {{3, 4, 5}, {3, 4, 5}});
  t->Add("Scale", "type: 'Scale'", {{3, 4}, {}});  // a scalar second bottom

  for (const char* params : {"", "axis: 0 num_axes: 2", "axis: -1", "num_axes: -1", "num_axes: 0"})
    t->Add("Bias", std::string("type: 'Bias' bias_param { ") + params + " filler { type: 'gaussian' } }",
           {{3, 4, 5, 6}});
  t->Add("Bias", "type: 'Bias'", {{3, 4, 5, 6}, {4, 5}});
  t->Add("Bias", "type: 'Bias'", {{3, 4}, {}});

  for (const std::vector<int>& shape : kChunkedShapes) {
    t->Add("BatchNorm", "type: 'BatchNorm' phase: TRAIN batch_norm_param { use_global_stats: false }", {shape});
    t->Add("BatchNorm", scale_bias, {shape});
    t->Add("Scale", "type: 'Scale' scale_param { axis: 1 bias_term: true" + fillers + "}", {shape});
    t->Add("Bias", "type: 'Bias' bias_param { filler { type: 'gaussian' } }", {shape});
  }
  // The gradient written into a second bottom rather than added to a blob.
  t->Add("Scale", "type: 'Scale' scale_param { bias_term: true" + fillers + "}", {{8, 3, 67, 67}, {3}});
  t->Add("Bias", "type: 'Bias'", {{8, 3, 67, 67}, {3}});
}

// loss_gpu_test.cpp
void AddLossRows(RowList* t) {
  for (const std::string norm : {"VALID", "FULL", "BATCH_SIZE", "NONE"}) {
    // Gaussian targets (not probabilities) still exercise the formula.
    t->Add("SigmoidCrossEntropyLoss", "type: 'SigmoidCrossEntropyLoss' loss_param { normalization: " + norm + " }",
           {{6, 5, 3}, {6, 15}});
    // Targets in {0, 1}, label 1 ignored.
    t->Add("SigmoidCrossEntropyLoss",
           "type: 'SigmoidCrossEntropyLoss' loss_weight: 2 loss_param { normalization: " + norm + " ignore_label: 1 }",
           {{6, 5}, {6, 5}}, 1, Labels(1, 2));
  }
  t->Add("SigmoidCrossEntropyLoss", "type: 'SigmoidCrossEntropyLoss' loss_param { normalize: false }",
         {{4, 7}, {4, 7}}, 1, Labels(1, 2));
  t->Add("SigmoidCrossEntropyLoss", "type: 'SigmoidCrossEntropyLoss' loss_param { ignore_label: 0 }", {{4, 7}, {4, 7}},
         1, Labels(1, 1));  // every position ignored
  GpuCompareOptions large = Labels(1, 2);
  large.input_std = 20.0f;
  t->Add("SigmoidCrossEntropyLoss", "type: 'SigmoidCrossEntropyLoss'", {{64, 1000}, {64, 1000}}, 1, large);

  for (const std::string extra : {"", "contrastive_loss_param { legacy_version: true }",
                                  "loss_weight: 2 contrastive_loss_param { margin: 4 }"}) {
    GpuCompareOptions o = Labels(2, 2);
    o.input_std = 0.5f;  // distances on both sides of the margin
    t->Add("ContrastiveLoss", "type: 'ContrastiveLoss' " + extra, {{16, 5}, {16, 5}, {16}}, 1, o);
    t->Add("ContrastiveLoss", "type: 'ContrastiveLoss' " + extra, {{300, 7, 1, 1}, {300, 7, 1, 1}, {300, 1, 1, 1}}, 1,
           o);
  }

  t->Add("HingeLoss", "type: 'HingeLoss'", {{8, 10}, {8}}, 1, Labels(1, 10));
  t->Add("HingeLoss", "type: 'HingeLoss' loss_weight: 2 hinge_loss_param { norm: L2 }", {{8, 10}, {8}}, 1,
         Labels(1, 10));
  t->Add("HingeLoss", "type: 'HingeLoss' hinge_loss_param { norm: L2 }", {{300, 4, 2, 3}, {300}}, 1, Labels(1, 24));

  // Gaussian "probabilities" include negatives and values near 0: the clamp and large gradients
  // (compared relative to their size).
  t->Add("MultinomialLogisticLoss", "type: 'MultinomialLogisticLoss'", {{300, 10}, {300}}, 1, Labels(1, 10));
  t->Add("MultinomialLogisticLoss", "type: 'MultinomialLogisticLoss' loss_weight: 2", {{5, 4}, {5}}, 1, Labels(1, 4));
}

// shape_ops_gpu_test.cpp
void AddShapeOpRows(RowList* t) {
  t->Add("Crop", "type: 'Crop'", {{2, 3, 5, 6}, {1, 1, 3, 4}});
  t->Add("Crop", "type: 'Crop' crop_param { offset: 1 }", {{2, 3, 5, 6}, {1, 1, 3, 4}});
  t->Add("Crop", "type: 'Crop' crop_param { axis: 1 offset: 1 offset: 2 offset: 0 }", {{2, 3, 5, 6}, {2, 2, 3, 4}});
  t->Add("Crop", "type: 'Crop' crop_param { axis: 0 offset: 1 offset: 0 offset: 2 offset: 1 }",
         {{3, 3, 5, 6}, {2, 3, 3, 4}});
  t->Add("Crop", "type: 'Crop' crop_param { axis: -1 offset: 3 }", {{4, 7}, {4, 2}});
  t->Add("Crop", "type: 'Crop'", {{2, 3, 5, 6}, {2, 3, 5, 6}});  // nothing cropped

  t->Add("Tile", "type: 'Tile' tile_param { tiles: 3 }", {{2, 3, 4, 5}});
  t->Add("Tile", "type: 'Tile' tile_param { axis: 0 tiles: 2 }", {{2, 3, 4}});
  t->Add("Tile", "type: 'Tile' tile_param { axis: -1 tiles: 5 }", {{2, 3, 4}});
  t->Add("Tile", "type: 'Tile' tile_param { axis: 2 tiles: 1 }", {{2, 3, 4}});

  for (const char* op : {"SUM", "ASUM", "SUMSQ", "MEAN"}) {
    const std::string p = std::string("type: 'Reduction' reduction_param { operation: ") + op;
    t->Add("Reduction", p + " }", {{2, 3, 4, 5}});
    t->Add("Reduction", p + " axis: 1 coeff: -0.5 }", {{2, 3, 4, 5}});
    t->Add("Reduction", p + " axis: -1 coeff: 2 }", {{7, 3, 300}});
    t->Add("Reduction", p + " axis: 1 }", {{3, 100000}});  // rows much longer than a block
  }

  t->Add("ArgMax", "type: 'ArgMax'", {{4, 10}}, 1, ForwardOnly());
  t->Add("ArgMax", "type: 'ArgMax' argmax_param { top_k: 3 }", {{4, 3, 2, 5}}, 1, ForwardOnly());
  t->Add("ArgMax", "type: 'ArgMax' argmax_param { top_k: 4 out_max_val: true }", {{4, 10}}, 1, ForwardOnly());
  t->Add("ArgMax", "type: 'ArgMax' argmax_param { axis: 1 }", {{2, 5, 3, 4}}, 1, ForwardOnly());
  t->Add("ArgMax", "type: 'ArgMax' argmax_param { axis: 1 top_k: 5 out_max_val: true }", {{2, 5, 3, 4}}, 1,
         ForwardOnly());
  t->Add("ArgMax", "type: 'ArgMax' argmax_param { axis: -1 top_k: 2 }", {{2, 5, 3, 4}}, 1, ForwardOnly());
  t->Add("ArgMax", "type: 'ArgMax' argmax_param { axis: 0 top_k: 2 }", {{3, 7}}, 1, ForwardOnly());
}

// structure_gpu_test.cpp
void AddStructureRows(RowList* t) {
  t->Add("Split", "type: 'Split'", {{2, 3, 4}}, 1);
  t->Add("Split", "type: 'Split'", {{2, 3, 4}}, 3);  // the top diffs summed
  t->Add("Flatten", "type: 'Flatten'", {{2, 3, 4, 5}});
  // A copy in a float fixture; in the bf16 table (RunInTypedNet) a conversion, odd size.
  t->Add("Cast", "type: 'Cast'", {{3, 1001}});
  t->Add("Flatten", "type: 'Flatten' flatten_param { axis: 2 }", {{2, 3, 4, 5}});
  t->Add("Reshape", "type: 'Reshape' reshape_param { shape { dim: 0 dim: -1 dim: 5 } }", {{2, 3, 4, 5}});
  t->Add("Silence", "type: 'Silence'", {{2, 3}, {4}}, 0);

  t->Add("Concat", "type: 'Concat' concat_param { axis: 0 }", {{2, 3, 4, 5}, {1, 3, 4, 5}, {3, 3, 4, 5}});
  t->Add("Concat", "type: 'Concat'", {{2, 3, 4, 5}, {2, 2, 4, 5}, {2, 1, 4, 5}});
  t->Add("Concat", "type: 'Concat' concat_param { axis: 2 }", {{2, 3, 4, 5}, {2, 3, 1, 5}});
  t->Add("Concat", "type: 'Concat' concat_param { axis: -1 }", {{2, 3, 4, 5}, {2, 3, 4, 2}, {2, 3, 4, 1}});
  t->Add("Concat", "type: 'Concat' concat_param { concat_dim: 1 }", {{3, 2}, {3, 7}});
  t->Add("Concat", "type: 'Concat'", {{2, 3, 4}});  // one bottom: a plain copy

  t->Add("Slice", "type: 'Slice' slice_param { axis: 0 slice_point: 1 slice_point: 4 }", {{6, 3, 4, 5}}, 3);
  t->Add("Slice", "type: 'Slice'", {{2, 3, 4, 5}}, 3);
  t->Add("Slice", "type: 'Slice' slice_param { axis: 2 slice_point: 3 }", {{2, 3, 4, 5}}, 2);
  t->Add("Slice", "type: 'Slice' slice_param { axis: -1 slice_point: 1 slice_point: 2 }", {{2, 3, 4, 5}}, 3);
  t->Add("Slice", "type: 'Slice' slice_param { slice_dim: 1 }", {{3, 8}}, 2);

  t->Add("Eltwise", "type: 'Eltwise'", {{2, 3, 4}, {2, 3, 4}});
  t->Add("Eltwise", "type: 'Eltwise' eltwise_param { operation: SUM coeff: 1 coeff: -0.5 coeff: 2 }",
         {{2, 3, 4}, {2, 3, 4}, {2, 3, 4}});
  t->Add("Eltwise", "type: 'Eltwise' eltwise_param { operation: PROD }", {{2, 3, 4}, {2, 3, 4}, {2, 3, 4}});
  t->Add("Eltwise", "type: 'Eltwise' eltwise_param { operation: PROD stable_prod_grad: false }",
         {{2, 3, 4}, {2, 3, 4}});
  t->Add("Eltwise", "type: 'Eltwise' eltwise_param { operation: MAX }", {{2, 3, 4}, {2, 3, 4}, {2, 3, 4}});

  t->Add("Input", "type: 'Input' input_param { shape { dim: 2 dim: 3 } }", {}, 2);  // nothing to compute
  t->Add("DummyData", "type: 'DummyData' dummy_data_param { shape { dim: 2 dim: 3 } }", {}, 1);
  t->Add("DummyData", R"(type: 'DummyData' dummy_data_param {
                           data_filler { type: 'gaussian' std: 2 }
                           data_filler { type: 'constant' value: 3 }
                           data_filler { type: 'uniform' min: -1 max: 1 }
                           data_filler { type: 'xavier' }
                           shape { dim: 2 dim: 3 } shape { dim: 4 } shape { dim: 5 dim: 6 } shape { dim: 3 dim: 4 } })",
         {}, 4);
}

// recurrent_gpu_test.cpp
GpuCompareOptions BinaryCont(int cont_bottom) {
  GpuCompareOptions o;
  o.label_bottoms = {{cont_bottom, 2}};  // cont ∈ {0, 1}
  o.tolerance = 1e-4f;
  return o;
}

// std: the fillers' deviation (small for long sequences, so rounding differences are not amplified).
std::string Recurrent(const std::string& type, int num_output, const std::string& extra = "",
                      const std::string& std = "0.3") {
  return "name: 'r' type: '" + type + "' recurrent_param { num_output: " + std::to_string(num_output) +
         " weight_filler { type: 'gaussian' std: " + std + " } bias_filler { type: 'gaussian' std: " + std +
         " } " + extra + " }";
}

void AddRecurrentRows(RowList* t) {
  t->Add("LSTMUnit", "type: 'LSTMUnit'", {{1, 5, 7}, {1, 5, 28}, {1, 5}}, 2, BinaryCont(2));
  t->Add("LSTMUnit", "type: 'LSTMUnit'", {{1, 37, 61}, {1, 37, 244}, {1, 37}}, 2, BinaryCont(2));

  t->Add("RNN", Recurrent("RNN", 4), {{3, 2, 3}, {3, 2}}, 1, BinaryCont(1));
  t->Add("RNN", Recurrent("RNN", 4), {{3, 2, 3}, {3, 2}, {2, 5}}, 1, BinaryCont(1));
  t->Add("RNN", Recurrent("RNN", 4, "expose_hidden: true"), {{3, 2, 3}, {3, 2}, {1, 2, 4}}, 2, BinaryCont(1));
  t->Add("RNN", Recurrent("RNN", 4, "expose_hidden: true"), {{3, 2, 3}, {3, 2}, {2, 5}, {1, 2, 4}}, 2, BinaryCont(1));
  t->Add("RNN", Recurrent("RNN", 33, "", "0.1"), {{12, 9, 13}, {12, 9}, {9, 6}}, 1, BinaryCont(1));

  t->Add("LSTM", Recurrent("LSTM", 4), {{3, 2, 3}, {3, 2}}, 1, BinaryCont(1));
  t->Add("LSTM", Recurrent("LSTM", 4), {{3, 2, 3}, {3, 2}, {2, 5}}, 1, BinaryCont(1));
  t->Add("LSTM", Recurrent("LSTM", 4, "expose_hidden: true"), {{3, 2, 3}, {3, 2}, {1, 2, 4}, {1, 2, 4}}, 3,
         BinaryCont(1));
  t->Add("LSTM", Recurrent("LSTM", 4, "expose_hidden: true"), {{3, 2, 3}, {3, 2}, {2, 5}, {1, 2, 4}, {1, 2, 4}}, 3,
         BinaryCont(1));
  t->Add("LSTM", Recurrent("LSTM", 33, "", "0.1"), {{12, 9, 13}, {12, 9}, {9, 6}}, 1, BinaryCont(1));
}

// zoo_gpu_test.cpp. Embed, Filter and BatchReindex refuse a gradient for their index bottom, which
// the comparison's Backward asks for: those rows compare forward only (ZooGpu's tests compare their
// backward with propagate_down false there).
void AddZooRows(RowList* t) {
  for (const char* bias : {"true", "false"})
    t->Add("Embed",
           std::string("type: 'Embed' embed_param { num_output: 7 input_dim: 11 bias_term: ") + bias +
               " weight_filler { type: 'gaussian' } bias_filler { type: 'gaussian' } }",
           {{4, 5}}, 1, ForwardOnly(Labels(0, 11)));

  for (const char* p : {"", "normalize_variance: false", "across_channels: true",
                        "across_channels: true normalize_variance: false", "eps: 0.1"}) {
    const std::string text = std::string("type: 'MVN' mvn_param { ") + p + " }";
    t->Add("MVN", text, {{3, 4, 5, 6}});
    t->Add("MVN", text, {{2, 3, 37, 41}});  // rows longer than a block
    t->Add("MVN", text, {{5, 7}});          // 2-D: top (5, 7, 1, 1)
  }

  // Random 0/1 selectors through the comparison's label bottoms.
  t->Add("Filter", "type: 'Filter'", {{16, 3, 4}, {16, 5}, {16}}, 2, ForwardOnly(Labels(2, 2)));
  t->Add("BatchReindex", "type: 'BatchReindex'", {{6, 3, 4}, {20}}, 1, ForwardOnly(Labels(1, 6)));

  for (const char* mode : {"VALID", "FULL", "BATCH_SIZE", "NONE"}) {
    const std::string loss_param = std::string(" loss_param { ignore_label: 1 normalization: ") + mode + " }";
    t->Add("InfogainLoss", "type: 'InfogainLoss' loss_weight: 2" + loss_param, {{8, 5}, {8}, {5, 5}}, 1, Labels(1, 5));
    t->Add("InfogainLoss", "type: 'InfogainLoss'" + loss_param, {{3, 4, 5, 6}, {3, 5, 6}, {4, 4}}, 2, Labels(1, 4));
  }
  t->Add("InfogainLoss", "type: 'InfogainLoss' infogain_loss_param { axis: -1 }", {{3, 4, 6}, {3, 4}, {6, 6}}, 1,
         Labels(1, 6));
}

// conv_family_gpu_test.cpp
void AddConvFamilyRows(RowList* t) {
  const std::string deconv = "type: 'Deconvolution' convolution_param { " + kFillers;
  const GpuCompareOptions o = Tolerance(2e-4f);
  t->Add("Deconvolution", deconv + "num_output: 3 kernel_size: 3 stride: 2 }", {{2, 4, 5, 6}}, 1, o);
  t->Add("Deconvolution", deconv + "num_output: 6 group: 2 kernel_size: 4 stride: 2 pad: 1 }", {{2, 4, 5, 5}}, 1, o);
  t->Add("Deconvolution",
         deconv + "num_output: 6 group: 2 kernel_size: 3 dilation: 2 stride: 2 pad: 1 bias_term: false }",
         {{2, 4, 4, 3}}, 1, o);
  t->Add("Deconvolution",
         deconv + "num_output: 5 kernel_h: 3 kernel_w: 2 pad_h: 1 pad_w: 0 stride_h: 1 stride_w: 2 }",
         {{3, 3, 6, 5}}, 1, o);
  t->Add("Deconvolution", deconv + "num_output: 8 group: 8 kernel_size: 2 stride: 2 }", {{2, 8, 3, 3}}, 1, o);
  t->Add("Deconvolution", deconv + "num_output: 3 kernel_size: 3 stride: 2 pad: 1 }", {{2, 2, 5, 6}, {2, 2, 5, 6}}, 2,
         o);

  // MAX and AVE; STOCHASTIC samples at random in TRAIN (ConvFamilyGpu.SppMatchesTheCpu).
  t->Add("SPP", "type: 'SPP' spp_param { pyramid_height: 3 }", {{2, 3, 7, 6}}, 1, Tolerance(1e-5f));
  t->Add("SPP", "type: 'SPP' spp_param { pyramid_height: 3 pool: AVE }", {{2, 3, 7, 6}}, 1, Tolerance(1e-5f));
  t->Add("SPP", "type: 'SPP' spp_param { pyramid_height: 1 }", {{2, 3, 5, 4}}, 1, Tolerance(1e-5f));
  t->Add("SPP", "type: 'SPP' spp_param { pyramid_height: 2 pool: AVE }", {{1, 2, 13, 9}}, 1, Tolerance(1e-5f));
}

// im2col_hdf5_output_gpu_test.cpp
void AddIm2colRows(RowList* t) {
  const GpuCompareOptions o = Tolerance(1e-6f);  // copies forward; sums of a few values backward
  const std::string p = "type: 'Im2col' convolution_param { ";
  t->Add("Im2col", p + "kernel_size: 3 }", {{2, 3, 6, 5}}, 1, o);
  t->Add("Im2col", p + "kernel_size: 2 pad: 1 stride: 2 dilation: 2 }", {{2, 2, 7, 7}}, 1, o);
  t->Add("Im2col", p + "kernel_h: 3 kernel_w: 2 pad_h: 1 pad_w: 2 stride_h: 2 stride_w: 1 dilation: 2 dilation: 3 }",
         {{3, 4, 9, 8}}, 1, o);
  t->Add("Im2col", p + "axis: 2 kernel_size: 3 pad: 1 stride: 2 }", {{2, 3, 2, 5, 4}}, 1, o);
  t->Add("Im2col", p + "kernel_size: 3 dilation: 2 pad: 1 stride: 2 }", {{2, 3, 9}}, 1, o);
  t->Add("Im2col", p + "kernel_size: 1 }", {{2, 5, 3, 3}}, 1, o);
}

const std::vector<Row>& Rows() {
  static const RowList* const table = [] {
    auto* t = new RowList;
    AddActivationRows(t);
    AddNeuronRows(t);
    AddDenseRows(t);
    AddNormRows(t);
    AddLossRows(t);
    AddShapeOpRows(t);
    AddStructureRows(t);
    AddRecurrentRows(t);
    AddZooRows(t);
    AddConvFamilyRows(t);
    AddIm2colRows(t);
    return t;
  }();
  return table->rows();
}

// The types with rows, sorted, each once.
std::vector<std::string> TypesWithRows() {
  std::set<std::string> types;
  for (const Row& row : Rows()) types.insert(row.type);
  return {types.begin(), types.end()};
}

// "Pooling row 3: <layer> over { { 2, 3, 7, 9 } }, 1 top": k counts the rows of one type from 0.
std::string Describe(const Row& row, int k) {
  return row.type + " row " + std::to_string(k) + ": " + row.layer + " over " + testing::PrintToString(row.bottoms) +
         ", " + std::to_string(row.tops) + (row.tops == 1 ? " top" : " tops");
}

// check(row) for each row of `type` (empty: every row), under a trace naming the row; an exception is
// a failure.
void ForEachRow(const std::string& type, const std::function<void(const Row&)>& check) {
  std::map<std::string, int> seen;
  for (const Row& row : Rows()) {
    if (!type.empty() && row.type != type) continue;
    SCOPED_TRACE(Describe(row, seen[row.type]++));
    try {
      check(row);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "threw: " << e.what();
    }
  }
}

// Fails, naming the blob and the first such element, when `values` hold a NaN or an infinity.
void ExpectFinite(const std::vector<float>& values, const std::string& what) {
  for (size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) {
      ADD_FAILURE() << what << " element " << i << " is " << values[i];
      return;
    }
  }
}

// Every top, the loss and every gradient of a run finite.
void ExpectRunFinite(const ComparedRun& run) {
  ExpectFinite({run.loss}, "loss");
  for (size_t t = 0; t < run.tops.size(); ++t) ExpectFinite(run.tops[t], "top " + std::to_string(t));
  for (size_t b = 0; b < run.bottom_diffs.size(); ++b)
    if (run.bottom_diffs[b]) ExpectFinite(*run.bottom_diffs[b], "bottom diff " + std::to_string(b));
  for (size_t p = 0; p < run.param_diffs.size(); ++p) ExpectFinite(run.param_diffs[p], "parameter diff " + std::to_string(p));
}

}  // namespace

TEST(LayerTable, EveryRegisteredTypeHasARowOrAReason) {
  std::map<std::string, int> rows, reasons;
  for (const Row& row : Rows()) ++rows[row.type];
  for (const NoRow& entry : kNoRow) ++reasons[entry.type];
  for (const std::string& type : LayerRegistry::Types()) {
    EXPECT_TRUE(rows.count(type) || reasons.count(type))
        << "layer type " << type << " has neither a row in layer_table_gpu_test.cpp's table nor a reason in kNoRow";
    EXPECT_FALSE(rows.count(type) && reasons.count(type))
        << "layer type " << type << " has rows and a reason for having none in kNoRow";
    EXPECT_LE(reasons[type], 1) << "layer type " << type << " has more than one reason in kNoRow";
  }
  for (const auto& [type, count] : rows)
    EXPECT_TRUE(LayerRegistry::Has(type)) << count << " row(s) name type " << type << ", which is not registered";
  for (const auto& [type, count] : reasons)
    EXPECT_TRUE(LayerRegistry::Has(type)) << "kNoRow names type " << type << ", which is not registered";
  // Each row's layer is of the type the row is filed under.
  std::map<std::string, int> seen;
  for (const Row& row : Rows()) {
    const int k = seen[row.type]++;
    EXPECT_EQ(ParseLayer(row.layer).type(), row.type) << Describe(row, k);
  }
}

// Each row set up on the CPU over the comparison's inputs (RunForComparison), run forward and, where
// the row compares it, backward: every top, the loss and every gradient finite. Catches a row that
// no longer sets up (a renamed parameter, a shape the layer now refuses) without a GPU.
TEST(LayerTable, EveryRowRunsOnTheCpu) {
  ForEachRow("", [](const Row& row) {
    LayerFixture cpu(row.layer, row.bottoms, row.tops, row.options.seed, Device::kCPU);
    ExpectRunFinite(RunForComparison(cpu, row.options));
  });
}

// Each row in a bf16 net on the CPU (RunInTypedNet: the Net casts around the layer and stores its tops
// in bf16): it builds, runs, and gives finite values.
TEST(LayerTable, EveryRowRunsOnTheCpuInBf16) {
  ForEachRow("", [](const Row& row) {
    ExpectRunFinite(RunInTypedNet(row.layer, row.bottoms, row.tops, row.options, Device::kCPU, BFLOAT16));
  });
}

// A type with rows has GPU code exactly when the build has CUDA (Layer::HasGpuImplementation's default;
// a GPU net runs a layer without it on the CPU), so every row's comparison runs the GPU path.
TEST(LayerTable, EveryRowTypeClaimsGpuSupportExactlyWhenBuiltWithCuda) {
  Context ctx(Device::kCPU, 1);
  std::set<std::string> checked;
  for (const Row& row : Rows()) {
    if (!checked.insert(row.type).second) continue;
    auto layer = LayerRegistry::Create(ParseLayer(row.layer), ctx);
    EXPECT_EQ(layer->HasGpuImplementation(), BuiltWithCuda()) << row.type;
  }
}

// One instance per type, named by it; each of the type's rows through ExpectGpuMatchesCpu, whose
// failures name the blob and element, under a trace naming the row.
class LayerTableGpu : public testing::TestWithParam<std::string> {};

TEST_P(LayerTableGpu, EveryRowMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  ForEachRow(GetParam(), [](const Row& row) { ExpectGpuMatchesCpu(row.layer, row.bottoms, row.tops, row.options); });
}

INSTANTIATE_TEST_SUITE_P(EveryType, LayerTableGpu, testing::ValuesIn(TypesWithRows()),
                         [](const testing::TestParamInfo<std::string>& info) { return info.param; });

// The same rows in bf16 nets on both devices (ExpectGpuMatchesCpuInStorage): the GPU's bf16 results
// are the CPU's, up to one bf16 step where a float result straddles a rounding boundary.
class LayerTableGpuBf16 : public testing::TestWithParam<std::string> {};

TEST_P(LayerTableGpuBf16, EveryRowMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  ForEachRow(GetParam(), [](const Row& row) {
    ExpectGpuMatchesCpuInStorage(row.layer, row.bottoms, row.tops, row.options, BFLOAT16);
  });
}

INSTANTIATE_TEST_SUITE_P(EveryType, LayerTableGpuBf16, testing::ValuesIn(TypesWithRows()),
                         [](const testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace cortado::test
