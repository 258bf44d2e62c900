// upgrade_test.cpp — Caffe's legacy net formats read as Caffe's UpgradeNetAsNeeded reads them: a V1
// LeNet becomes exactly models/mnist/lenet_train_test.prototxt; V1 types, ParamSpecs, *_param
// messages and legacy data-transform fields; V0 layers (padding folded in); input_dim; old BatchNorm
// ParamSpecs; one-line errors. End to end: a V1 net trains, tests and times through the trainer like
// its upgraded form, V1 and V0 .caffemodel weights load into a current net, and `trainer upgrade`
// round-trips prototxt and binary.
#include <google/protobuf/descriptor.h>
#include <google/protobuf/unknown_field_set.h>
#include <google/protobuf/util/message_differencer.h>

#include <regex>
#include <sstream>

#include "cortado/error.hpp"
#include "cortado/io.hpp"
#include "cortado/net.hpp"
#include "cortado/upgrade.hpp"
#include "test_util.hpp"

namespace cortado::test {

namespace {

namespace pb = google::protobuf;

// Caffe's LeNet as it was written before the `layer` format, with the training Data layer's scale
// in the legacy data_param (the test one already uses transform_param).
const char* kV1LeNet = R"(name: "LeNet"
layers {
  name: "mnist"
  type: DATA
  top: "data"
  top: "label"
  data_param {
    source: "examples/mnist/mnist_train_lmdb"
    backend: LMDB
    batch_size: 64
    scale: 0.00390625
  }
  include: { phase: TRAIN }
}
layers {
  name: "mnist"
  type: DATA
  top: "data"
  top: "label"
  data_param {
    source: "examples/mnist/mnist_test_lmdb"
    backend: LMDB
    batch_size: 100
  }
  transform_param {
    scale: 0.00390625
  }
  include: { phase: TEST }
}
layers {
  name: "conv1"
  type: CONVOLUTION
  bottom: "data"
  top: "conv1"
  blobs_lr: 1
  blobs_lr: 2
  convolution_param {
    num_output: 20
    kernel_size: 5
    stride: 1
    weight_filler { type: "xavier" }
    bias_filler { type: "constant" }
  }
}
layers {
  name: "pool1"
  type: POOLING
  bottom: "conv1"
  top: "pool1"
  pooling_param { pool: MAX kernel_size: 2 stride: 2 }
}
layers {
  name: "conv2"
  type: CONVOLUTION
  bottom: "pool1"
  top: "conv2"
  blobs_lr: 1
  blobs_lr: 2
  convolution_param {
    num_output: 50
    kernel_size: 5
    stride: 1
    weight_filler { type: "xavier" }
    bias_filler { type: "constant" }
  }
}
layers {
  name: "pool2"
  type: POOLING
  bottom: "conv2"
  top: "pool2"
  pooling_param { pool: MAX kernel_size: 2 stride: 2 }
}
layers {
  name: "ip1"
  type: INNER_PRODUCT
  bottom: "pool2"
  top: "ip1"
  blobs_lr: 1
  blobs_lr: 2
  inner_product_param {
    num_output: 500
    weight_filler { type: "xavier" }
    bias_filler { type: "constant" }
  }
}
layers {
  name: "relu1"
  type: RELU
  bottom: "ip1"
  top: "ip1"
}
layers {
  name: "ip2"
  type: INNER_PRODUCT
  bottom: "ip1"
  top: "ip2"
  blobs_lr: 1
  blobs_lr: 2
  inner_product_param {
    num_output: 10
    weight_filler { type: "xavier" }
    bias_filler { type: "constant" }
  }
}
layers {
  name: "accuracy"
  type: ACCURACY
  bottom: "ip2"
  bottom: "label"
  top: "accuracy"
  include: { phase: TEST }
}
layers {
  name: "loss"
  type: SOFTMAX_LOSS
  bottom: "ip2"
  bottom: "label"
  top: "loss"
}
)";

NetParameter Parse(const std::string& text) {
  NetParameter param;
  ReadProtoFromTextString(text, &param, "test.prototxt");
  return param;
}

NetParameter Upgraded(const std::string& text) {
  NetParameter param = Parse(text);
  EXPECT_TRUE(NetNeedsUpgrade(param));
  UpgradeNet(&param, "test.prototxt");
  EXPECT_FALSE(NetNeedsUpgrade(param));
  return param;
}

// Field-by-field equality, with protobuf's report of the differences.
void ExpectSameNet(const NetParameter& expected, const NetParameter& actual) {
  pb::util::MessageDifferencer differ;
  std::string report;
  differ.ReportDifferencesToString(&report);
  EXPECT_TRUE(differ.Compare(expected, actual)) << report << "\nupgraded:\n" << actual.DebugString();
}

bool Has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A run of the trainer that must fail as a user's mistake: exit 1, only glog lines before a last
// "trainer: error: ..." line. Returns that line's message.
std::string TrainerError(const std::string& args) {
  const CommandResult r = RunCommand(ToolPath("trainer") + " " + args);
  EXPECT_EQ(r.exit_code, 1) << args << "\n" << r.err;
  EXPECT_FALSE(Has(r.err, "Check failed") || Has(r.err, "*** ") || Has(r.err, "terminate called")) << r.err;
  const std::string last = LastLine(r.err);
  std::istringstream lines(r.err.substr(0, r.err.rfind(last)));
  for (std::string line; std::getline(lines, line);)
    EXPECT_TRUE(std::regex_match(line, std::regex("^[IWE][0-9]{4} .*"))) << "not a log line: " << line;
  const std::string prefix = "trainer: error: ";
  EXPECT_EQ(last.rfind(prefix, 0), 0u) << r.err;
  return last.substr(std::min(prefix.size(), last.size()));
}

}  // namespace

// ---- the upgraded NetParameter ------------------------------------------------------------------

TEST(Upgrade, V1LeNetBecomesTheCurrentLeNet) {
  NetParameter upgraded = Upgraded(kV1LeNet);
  ASSERT_EQ(upgraded.layer_size(), 11);
  EXPECT_EQ(upgraded.layers_size(), 0);
  // The data sources are Caffe's examples/ paths in the old file and data/ paths in ours.
  for (auto& layer : *upgraded.mutable_layer()) {
    if (!layer.has_data_param()) continue;
    std::string* source = layer.mutable_data_param()->mutable_source();
    ASSERT_EQ(source->rfind("examples/mnist/", 0), 0u) << *source;
    *source = "data/mnist/" + source->substr(std::string("examples/mnist/").size());
  }
  NetParameter modern;
  ReadProtoFromTextFile(SourceDir() + "/models/mnist/lenet_train_test.prototxt", &modern);
  ExpectSameNet(modern, upgraded);
  // The legacy scale left data_param: the Data layer refuses it there.
  EXPECT_FALSE(upgraded.layer(0).data_param().has_scale());
  EXPECT_FLOAT_EQ(upgraded.layer(0).transform_param().scale(), 0.00390625f);
}

TEST(Upgrade, EveryV1TypeHasCaffesName) {
  const std::map<V1LayerParameter::LayerType, std::string> caffe = {
      {V1LayerParameter::ABSVAL, "AbsVal"}, {V1LayerParameter::ACCURACY, "Accuracy"},
      {V1LayerParameter::ARGMAX, "ArgMax"}, {V1LayerParameter::BNLL, "BNLL"},
      {V1LayerParameter::CONCAT, "Concat"}, {V1LayerParameter::CONTRASTIVE_LOSS, "ContrastiveLoss"},
      {V1LayerParameter::CONVOLUTION, "Convolution"}, {V1LayerParameter::DATA, "Data"},
      {V1LayerParameter::DECONVOLUTION, "Deconvolution"}, {V1LayerParameter::DROPOUT, "Dropout"},
      {V1LayerParameter::DUMMY_DATA, "DummyData"}, {V1LayerParameter::EUCLIDEAN_LOSS, "EuclideanLoss"},
      {V1LayerParameter::ELTWISE, "Eltwise"}, {V1LayerParameter::EXP, "Exp"},
      {V1LayerParameter::FLATTEN, "Flatten"}, {V1LayerParameter::HDF5_DATA, "HDF5Data"},
      {V1LayerParameter::HDF5_OUTPUT, "HDF5Output"}, {V1LayerParameter::HINGE_LOSS, "HingeLoss"},
      {V1LayerParameter::IM2COL, "Im2col"}, {V1LayerParameter::IMAGE_DATA, "ImageData"},
      {V1LayerParameter::INFOGAIN_LOSS, "InfogainLoss"}, {V1LayerParameter::INNER_PRODUCT, "InnerProduct"},
      {V1LayerParameter::LRN, "LRN"}, {V1LayerParameter::MEMORY_DATA, "MemoryData"},
      {V1LayerParameter::MULTINOMIAL_LOGISTIC_LOSS, "MultinomialLogisticLoss"}, {V1LayerParameter::MVN, "MVN"},
      {V1LayerParameter::POOLING, "Pooling"}, {V1LayerParameter::POWER, "Power"},
      {V1LayerParameter::RELU, "ReLU"}, {V1LayerParameter::SIGMOID, "Sigmoid"},
      {V1LayerParameter::SIGMOID_CROSS_ENTROPY_LOSS, "SigmoidCrossEntropyLoss"},
      {V1LayerParameter::SILENCE, "Silence"}, {V1LayerParameter::SOFTMAX, "Softmax"},
      {V1LayerParameter::SOFTMAX_LOSS, "SoftmaxWithLoss"}, {V1LayerParameter::SPLIT, "Split"},
      {V1LayerParameter::SLICE, "Slice"}, {V1LayerParameter::TANH, "TanH"},
      {V1LayerParameter::WINDOW_DATA, "WindowData"}, {V1LayerParameter::THRESHOLD, "Threshold"},
  };
  const pb::EnumDescriptor* types = V1LayerParameter::LayerType_descriptor();
  EXPECT_EQ(static_cast<int>(caffe.size()), types->value_count() - 1);  // all but NONE
  for (int i = 0; i < types->value_count(); ++i) {
    const auto type = static_cast<V1LayerParameter::LayerType>(types->value(i)->number());
    if (type == V1LayerParameter::NONE) continue;
    ASSERT_TRUE(caffe.count(type)) << types->value(i)->name();
    EXPECT_EQ(V1LayerTypeName(type), caffe.at(type)) << types->value(i)->name();
    // And through a whole upgrade.
    NetParameter net;
    net.add_layers()->set_type(type);
    net.mutable_layers(0)->set_name("l");
    UpgradeNet(&net, "n");
    EXPECT_EQ(net.layer(0).type(), caffe.at(type));
  }
  EXPECT_EQ(V1LayerTypeName(V1LayerParameter::NONE), "");
}

TEST(Upgrade, V1ParamSpecsRulesLossWeightsAndBlobsCarryOver) {
  NetParameter v1 = Parse(R"(
    layers { name: "a" type: INNER_PRODUCT bottom: "x" top: "y" top: "z"
             param: "shared_w" param: "" blob_share_mode: PERMISSIVE blob_share_mode: STRICT
             blobs_lr: 1 blobs_lr: 2 weight_decay: 0.5 weight_decay: 0 loss_weight: 0 loss_weight: 2.5
             include { phase: TRAIN stage: "s" } exclude { min_level: 3 }
             blobs { shape { dim: 2 } data: 1 data: 2 } blobs { shape { dim: 1 } data: 3 } }
    layers { name: "b" type: CONVOLUTION blobs_lr: 0 })");
  UpgradeNet(&v1, "n");
  const NetParameter expected = Parse(R"(
    layer { name: "a" type: "InnerProduct" bottom: "x" top: "y" top: "z"
            param { name: "shared_w" share_mode: PERMISSIVE lr_mult: 1 decay_mult: 0.5 }
            param { name: "" share_mode: STRICT lr_mult: 2 decay_mult: 0 }
            loss_weight: 0 loss_weight: 2.5
            include { phase: TRAIN stage: "s" } exclude { min_level: 3 }
            blobs { shape { dim: 2 } data: 1 data: 2 } blobs { shape { dim: 1 } data: 3 } }
    layer { name: "b" type: "Convolution" param { lr_mult: 0 } })");
  ExpectSameNet(expected, v1);
}

TEST(Upgrade, EveryV1ParamMessageGoesToTheSameNamedField) {
  V1LayerParameter v1;
  v1.set_name("all");
  v1.set_type(V1LayerParameter::CONVOLUTION);
  const pb::Descriptor* d = V1LayerParameter::descriptor();
  std::vector<std::string> names;
  for (int f = 0; f < d->field_count(); ++f) {
    const pb::FieldDescriptor* field = d->field(f);
    const std::string& name = field->name();
    if (name.size() < 6 || name.compare(name.size() - 6, 6, "_param") != 0) continue;
    names.push_back(name);
    // A distinguishable message: its unknown fields carry the field number.
    v1.GetReflection()->MutableMessage(&v1, field)->GetReflection()->MutableUnknownFields(
        v1.GetReflection()->MutableMessage(&v1, field))->AddVarint(999, field->number());
  }
  EXPECT_GE(names.size(), 30u);
  NetParameter net;
  *net.add_layers() = v1;
  UpgradeNet(&net, "n");
  const LayerParameter& layer = net.layer(0);
  for (const std::string& name : names) {
    const pb::FieldDescriptor* to = LayerParameter::descriptor()->FindFieldByName(name);
    ASSERT_NE(to, nullptr) << name;
    ASSERT_TRUE(layer.GetReflection()->HasField(layer, to)) << name;
    const pb::Message& m = layer.GetReflection()->GetMessage(layer, to);
    const pb::UnknownFieldSet& unknown = m.GetReflection()->GetUnknownFields(m);
    ASSERT_EQ(unknown.field_count(), 1) << name;
    EXPECT_EQ(unknown.field(0).varint(), static_cast<uint64_t>(d->FindFieldByName(name)->number())) << name;
  }
}

TEST(Upgrade, LegacyTransformFieldsOfV1DataLayersMoveToTransformParam) {
  const NetParameter upgraded = Upgraded(R"(
    layers { name: "d" type: DATA data_param { source: "db" batch_size: 4 scale: 0.5 mean_file: "m.binaryproto"
                                               crop_size: 3 mirror: true } }
    layers { name: "i" type: IMAGE_DATA image_data_param { source: "list.txt" scale: 2 crop_size: 5 }
             transform_param { mean_value: 10 } }
    layers { name: "w" type: WINDOW_DATA window_data_param { source: "w.txt" mirror: true mean_file: "w.bp" } }
    layers { name: "other" type: HDF5_DATA hdf5_data_param { source: "h.txt" } })");
  const NetParameter expected = Parse(R"(
    layer { name: "d" type: "Data" transform_param { scale: 0.5 mean_file: "m.binaryproto" crop_size: 3 mirror: true }
            data_param { source: "db" batch_size: 4 } }
    layer { name: "i" type: "ImageData" transform_param { mean_value: 10 scale: 2 crop_size: 5 }
            image_data_param { source: "list.txt" } }
    layer { name: "w" type: "WindowData" transform_param { mirror: true mean_file: "w.bp" }
            window_data_param { source: "w.txt" } }
    layer { name: "other" type: "HDF5Data" hdf5_data_param { source: "h.txt" } })");
  ExpectSameNet(expected, upgraded);
}

TEST(Upgrade, InputDimBecomesInputShapeAndNetFieldsStay) {
  const NetParameter upgraded = Upgraded(R"(name: "deploy" input: "data" input: "im_info"
    input_dim: 1 input_dim: 3 input_dim: 224 input_dim: 200 input_dim: 1 input_dim: 1 input_dim: 1 input_dim: 3
    force_backward: true debug_info: true state { phase: TRAIN level: 2 }
    layers { name: "relu" type: RELU bottom: "data" top: "data" })");
  const NetParameter expected = Parse(R"(name: "deploy" input: "data" input: "im_info"
    input_shape { dim: 1 dim: 3 dim: 224 dim: 200 } input_shape { dim: 1 dim: 1 dim: 1 dim: 3 }
    force_backward: true debug_info: true state { phase: TRAIN level: 2 }
    layer { name: "relu" type: "ReLU" bottom: "data" top: "data" })");
  ExpectSameNet(expected, upgraded);
  // A current-format net with input_dim alone is upgraded too; input_shape, when given, wins.
  ExpectSameNet(Parse("input: 'x' input_shape { dim: 2 dim: 5 }"),
                Upgraded("input: 'x' input_dim: 1 input_dim: 1 input_dim: 1 input_dim: 1 input_shape { dim: 2 dim: 5 }"));
  NetParameter bad = Parse("input: 'x' input_dim: 1 input_dim: 3");
  EXPECT_EQ(ErrorOf([&] { UpgradeNet(&bad, "deploy.prototxt"); }),
            "deploy.prototxt: net has 1 inputs but 2 input_dim values; give 4 per input");
}

TEST(Upgrade, OldBatchNormParamSpecsStopLearning) {
  const NetParameter upgraded = Upgraded(R"(
    layer { name: "bn" type: "BatchNorm" bottom: "x" top: "x" param { lr_mult: 1 } param { lr_mult: 1 decay_mult: 3 }
            param { lr_mult: 1 } }
    layer { name: "bn2" type: "BatchNorm" bottom: "x" top: "x" }
    layer { name: "ip" type: "InnerProduct" bottom: "x" top: "y" param { lr_mult: 1 } param { lr_mult: 1 }
            param { lr_mult: 1 } })");
  const NetParameter expected = Parse(R"(
    layer { name: "bn" type: "BatchNorm" bottom: "x" top: "x" param { lr_mult: 0 decay_mult: 0 }
            param { lr_mult: 0 decay_mult: 0 } param { lr_mult: 0 decay_mult: 0 } }
    layer { name: "bn2" type: "BatchNorm" bottom: "x" top: "x" }
    layer { name: "ip" type: "InnerProduct" bottom: "x" top: "y" param { lr_mult: 1 } param { lr_mult: 1 }
            param { lr_mult: 1 } })");
  ExpectSameNet(expected, upgraded);
}

TEST(Upgrade, CurrentNetsNeedNoUpgrade) {
  NetParameter modern;
  ReadProtoFromTextFile(SourceDir() + "/models/mnist/lenet_train_test.prototxt", &modern);
  EXPECT_FALSE(NetNeedsUpgrade(modern));
  const NetParameter before = modern;
  UpgradeNet(&modern, "lenet");
  ExpectSameNet(before, modern);
}

TEST(Upgrade, V0NetWithPaddingLayerBecomesTheCurrentForm) {
  const NetParameter upgraded = Upgraded(R"(name: "v0"
    input: "extra" input_dim: 1 input_dim: 1 input_dim: 1 input_dim: 1
    layers { layer { name: "data" type: "data" source: "train_db" batchsize: 8 scale: 0.5 meanfile: "mean.bp"
                     cropsize: 5 mirror: true rand_skip: 3 } top: "data" top: "label" }
    layers { layer { name: "pad1" type: "padding" pad: 2 } bottom: "data" top: "pad1" }
    layers { layer { name: "conv1" type: "conv" num_output: 8 kernelsize: 5 stride: 2 group: 2 biasterm: false
                     weight_filler { type: "gaussian" std: 0.01 } bias_filler { type: "constant" value: 1 }
                     blobs_lr: 1 blobs_lr: 2 weight_decay: 1 weight_decay: 0
                     blobs { shape { dim: 1 } data: 7 } } bottom: "pad1" top: "conv1" }
    layers { layer { name: "relu1" type: "relu" num_output: 3 } bottom: "conv1" top: "conv1" }
    layers { layer { name: "pool1" type: "pool" pool: AVE kernelsize: 3 stride: 2 pad: 1 } bottom: "conv1" top: "pool1" }
    layers { layer { name: "norm1" type: "lrn" local_size: 3 alpha: 0.0001 beta: 0.5 k: 2 } bottom: "pool1" top: "norm1" }
    layers { layer { name: "drop1" type: "dropout" dropout_ratio: 0.25 } bottom: "norm1" top: "norm1" }
    layers { layer { name: "cat" type: "concat" concat_dim: 1 } bottom: "norm1" bottom: "norm1" top: "cat" }
    layers { layer { name: "ip1" type: "innerproduct" num_output: 10 } bottom: "cat" top: "ip1" }
    layers { layer { name: "loss" type: "softmax_loss" } bottom: "ip1" bottom: "label" })");
  const NetParameter expected = Parse(R"(name: "v0"
    input: "extra" input_shape { dim: 1 dim: 1 dim: 1 dim: 1 }
    layer { name: "data" type: "Data" top: "data" top: "label"
            transform_param { scale: 0.5 mean_file: "mean.bp" crop_size: 5 mirror: true }
            data_param { source: "train_db" batch_size: 8 rand_skip: 3 } }
    layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
            param { lr_mult: 1 decay_mult: 1 } param { lr_mult: 2 decay_mult: 0 }
            blobs { shape { dim: 1 } data: 7 }
            convolution_param { num_output: 8 bias_term: false pad: 2 kernel_size: 5 stride: 2 group: 2
                                weight_filler { type: "gaussian" std: 0.01 } bias_filler { type: "constant" value: 1 } } }
    layer { name: "relu1" type: "ReLU" bottom: "conv1" top: "conv1" }
    layer { name: "pool1" type: "Pooling" bottom: "conv1" top: "pool1"
            pooling_param { pool: AVE kernel_size: 3 stride: 2 pad: 1 } }
    layer { name: "norm1" type: "LRN" bottom: "pool1" top: "norm1" lrn_param { local_size: 3 alpha: 0.0001 beta: 0.5 k: 2 } }
    layer { name: "drop1" type: "Dropout" bottom: "norm1" top: "norm1" dropout_param { dropout_ratio: 0.25 } }
    layer { name: "cat" type: "Concat" bottom: "norm1" bottom: "norm1" top: "cat" concat_param { concat_dim: 1 } }
    layer { name: "ip1" type: "InnerProduct" bottom: "cat" top: "ip1" inner_product_param { num_output: 10 } }
    layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip1" bottom: "label" })");
  ExpectSameNet(expected, upgraded);
}

TEST(Upgrade, V0ImageWindowAndHdf5SettingsFindTheirMessages) {
  const NetParameter upgraded = Upgraded(R"(
    layers { layer { name: "img" type: "images" source: "list" batchsize: 2 shuffle_images: true new_height: 4
                     new_width: 6 rand_skip: 1 } top: "a" top: "b" }
    layers { layer { name: "win" type: "window_data" source: "w" batchsize: 3 det_fg_threshold: 0.6
                     det_bg_threshold: 0.4 det_fg_fraction: 0.5 det_context_pad: 16 det_crop_mode: "square" }
             top: "c" top: "d" }
    layers { layer { name: "h5" type: "hdf5_data" source: "h" batchsize: 5 } top: "e" top: "f" }
    layers { layer { name: "out" type: "hdf5_output" hdf5_output_param { file_name: "o.h5" } } bottom: "e" bottom: "f" }
    layers { layer { name: "info" type: "infogain_loss" source: "H.bp" } bottom: "e" bottom: "f" })");
  const NetParameter expected = Parse(R"(
    layer { name: "img" type: "ImageData" top: "a" top: "b"
            image_data_param { source: "list" batch_size: 2 shuffle: true new_height: 4 new_width: 6 rand_skip: 1 } }
    layer { name: "win" type: "WindowData" top: "c" top: "d"
            window_data_param { source: "w" batch_size: 3 fg_threshold: 0.6 bg_threshold: 0.4 fg_fraction: 0.5
                                context_pad: 16 crop_mode: "square" } }
    layer { name: "h5" type: "HDF5Data" top: "e" top: "f" hdf5_data_param { source: "h" batch_size: 5 } }
    layer { name: "out" type: "HDF5Output" bottom: "e" bottom: "f" hdf5_output_param { file_name: "o.h5" } }
    layer { name: "info" type: "InfogainLoss" bottom: "e" bottom: "f" infogain_loss_param { source: "H.bp" } })");
  ExpectSameNet(expected, upgraded);
}

// ---- what cannot be upgraded: one line naming the file and the layer -----------------------------

TEST(Upgrade, LayersThatCannotBeUpgradedAreNamed) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"layers { name: 'conv1' bottom: 'x' top: 'y' }",
       "net.prototxt: layer conv1: V1 layer has no type (give e.g. type: CONVOLUTION)"},
      {"layers { name: 'conv1' type: NONE }", "net.prototxt: layer conv1: V1 layer type NONE names no layer"},
      {"layers { type: RELU } layers { type: NONE }", "net.prototxt: layer #1 (unnamed): V1 layer type NONE"},
      {"layer { name: 'a' type: 'ReLU' } layers { name: 'b' type: RELU }",
       "net.prototxt: has both 'layer' entries (current form) and legacy V1 'layers' entries"},
      {"layers { layer { name: 'c' type: 'convolution' } }",
       "net.prototxt: layer c: unknown V0 layer type 'convolution'"},
      {"input: 'x' layers { layer { name: 'p' type: 'padding' pad: 1 } bottom: 'x' top: 'p' }"
       " layers { layer { name: 'r' type: 'relu' } bottom: 'p' top: 'r' }",
       "net.prototxt: layer r: a V0 padding layer feeds this 'relu' layer, but only conv and pool layers take padding"},
      {"layers { layer { name: 'r' type: 'relu' } bottom: 'nowhere' top: 'r' }",
       "net.prototxt: layer r: bottom 'nowhere' is not produced by any earlier layer"},
  };
  for (const auto& [text, expected] : cases) {
    NetParameter net = Parse(text);
    const std::string error = ErrorOf([&] { UpgradeNet(&net, "net.prototxt"); });
    EXPECT_EQ(error.rfind(expected, 0), 0u) << text << "\n" << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
}

TEST(Upgrade, BinaryV1LayerWithATypeNumberCaffeNeverHadIsNamed) {
  // protobuf keeps an enum number outside V1LayerParameter.LayerType as an unknown field.
  NetParameter written;
  V1LayerParameter* layer = written.add_layers();
  layer->set_name("mystery");
  layer->GetReflection()->MutableUnknownFields(layer)->AddVarint(V1LayerParameter::kTypeFieldNumber, 77);
  NetParameter read;
  ASSERT_TRUE(read.ParseFromString(written.SerializeAsString()));
  ASSERT_FALSE(read.layers(0).has_type());
  EXPECT_EQ(ErrorOf([&] { UpgradeNet(&read, "old.caffemodel"); }),
            "old.caffemodel: layer mystery: unknown V1 layer type 77");
}

// ---- end to end -----------------------------------------------------------------------------------

namespace {

// A small V1 classifier on a 12×12 LMDB: Data (legacy data_param scale), conv, pool, ip, relu, ip,
// accuracy in TEST, softmax loss; and its solver (4 iterations, a test every 2, snapshots at the end).
struct V1Workspace {
  V1Workspace() {
    WriteRandomImageLmdb(dir + "/db", 16, 1, 12, 4, 5);
    WriteFile(net, std::string(R"(name: "SmallV1"
layers { name: "data" type: DATA top: "data" top: "label"
         data_param { source: ")") + dir + R"(/db" backend: LMDB batch_size: 4 scale: 0.00390625 } }
layers { name: "conv1" type: CONVOLUTION bottom: "data" top: "conv1" blobs_lr: 1 blobs_lr: 2
         convolution_param { num_output: 4 kernel_size: 3 weight_filler { type: "xavier" } } }
layers { name: "pool1" type: POOLING bottom: "conv1" top: "pool1" pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
layers { name: "ip1" type: INNER_PRODUCT bottom: "pool1" top: "ip1" blobs_lr: 1 blobs_lr: 2 weight_decay: 1 weight_decay: 0
         inner_product_param { num_output: 16 weight_filler { type: "xavier" } } }
layers { name: "relu1" type: RELU bottom: "ip1" top: "ip1" }
layers { name: "ip2" type: INNER_PRODUCT bottom: "ip1" top: "ip2"
         inner_product_param { num_output: 4 weight_filler { type: "xavier" } } }
layers { name: "accuracy" type: ACCURACY bottom: "ip2" bottom: "label" top: "accuracy" include: { phase: TEST } }
layers { name: "loss" type: SOFTMAX_LOSS bottom: "ip2" bottom: "label" top: "loss" }
)");
  }
  // A solver for `net_path` whose snapshots go to <dir>/<prefix>_iter_4.*.
  std::string Solver(const std::string& net_path, const std::string& prefix) const {
    const std::string path = dir + "/" + prefix + "_solver.prototxt";
    WriteFile(path, "net: \"" + net_path + "\"\ntest_iter: 1\ntest_interval: 2\nbase_lr: 0.01\nmomentum: 0.9\n"
                    "weight_decay: 0.0005\nlr_policy: \"fixed\"\nmax_iter: 4\ndisplay: 1\nsnapshot_prefix: \"" +
                    dir + "/" + prefix + "\"\nsolver_mode: CPU\nrandom_seed: 1\n");
    return path;
  }
  std::string dir = NewTempDir();
  std::string net = dir + "/v1_net.prototxt";
};

}  // namespace

TEST(UpgradeTrainer, V1NetTrainsTestsAndTimesLikeItsUpgradedForm) {
  const V1Workspace ws;
  const auto trained = RunCommand(ToolPath("trainer") + " train --solver=" + ws.Solver(ws.net, "v1"));
  ASSERT_EQ(trained.exit_code, 0) << trained.err;
  EXPECT_TRUE(Has(trained.err, "Attempting to upgrade input file specified using deprecated V1LayerParameter: " +
                                   ws.net)) << trained.err;
  EXPECT_TRUE(Has(trained.err, "Successfully upgraded file specified using deprecated V1LayerParameter"));
  EXPECT_TRUE(Has(trained.err, "Attempting to upgrade input file specified using deprecated transformation "
                               "parameters: " + ws.net));
  EXPECT_TRUE(Has(trained.err, "Test net output #0: accuracy = "));
  EXPECT_TRUE(Has(trained.err, "Optimization Done."));
  // The upgraded prototxt trains to the same bytes.
  const std::string modern = ws.dir + "/modern_net.prototxt";
  const auto upgraded = RunCommand(ToolPath("trainer") + " upgrade --model=" + ws.net + " --output=" + modern);
  ASSERT_EQ(upgraded.exit_code, 0) << upgraded.err;
  const auto again = RunCommand(ToolPath("trainer") + " train --solver=" + ws.Solver(modern, "modern"));
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_FALSE(Has(again.err, "Attempting to upgrade"));
  EXPECT_EQ(ReadFile(ws.dir + "/v1_iter_4.caffemodel"), ReadFile(ws.dir + "/modern_iter_4.caffemodel"));
  // test and time read the V1 prototxt too.
  const auto tested = RunCommand(ToolPath("trainer") + " test --model=" + ws.net + " --weights=" + ws.dir +
                                 "/v1_iter_4.caffemodel --iterations=2");
  ASSERT_EQ(tested.exit_code, 0) << tested.err;
  EXPECT_TRUE(Has(tested.err, "Successfully upgraded file specified using deprecated V1LayerParameter"));
  EXPECT_GE(LastLoggedValue(tested.err, "accuracy"), 0.0) << tested.err;
  const auto timed = RunCommand(ToolPath("trainer") + " time --model=" + ws.net + " --iterations=1");
  ASSERT_EQ(timed.exit_code, 0) << timed.err;
  EXPECT_TRUE(Has(timed.err, "Average Forward-Backward"));
}

TEST(UpgradeTrainer, ConsolidatedV1SolverFromCaffeBuildsItsNets) {
  // Caffe's lenet_consolidated_solver.prototxt: V1 layers inline in net_param, stage-selected test nets.
  SolverParameter solver;
  ReadProtoFromTextFile(SourceDir() + "/tests/compat/caffe-models/examples/mnist/lenet_consolidated_solver.prototxt",
                        &solver);
  ASSERT_GT(solver.net_param().layers_size(), 0);
  NetParameter param = solver.net_param();
  param.mutable_state()->set_phase(TEST);
  param.mutable_state()->add_stage("test-on-test-set");
  UpgradeNet(&param, "consolidated");
  const NetParameter filtered = Net::FilterByState(param);
  std::vector<std::string> names;
  for (const auto& layer : filtered.layer()) names.push_back(layer.name() + ":" + layer.type());
  EXPECT_EQ(names, (std::vector<std::string>{"mnist:Data", "conv1:Convolution", "pool1:Pooling", "conv2:Convolution",
                                             "pool2:Pooling", "ip1:InnerProduct", "relu1:ReLU", "ip2:InnerProduct",
                                             "accuracy:Accuracy", "loss:SoftmaxWithLoss"}));
  EXPECT_EQ(filtered.layer(0).data_param().source(), "examples/mnist/mnist_test_lmdb");
}

namespace {

const char* kSmallModern = R"(name: "small"
layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 2 dim: 1 dim: 6 dim: 6 } } }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
        convolution_param { num_output: 3 kernel_size: 3 weight_filler { type: "gaussian" } } }
layer { name: "ip" type: "InnerProduct" bottom: "conv1" top: "ip"
        inner_product_param { num_output: 4 weight_filler { type: "gaussian" } } }
)";

// Weights for kSmallModern's layers with distinct values, as BlobProtos in the old 4-D form.
void AddBlob(pb::RepeatedPtrField<BlobProto>* blobs, std::vector<int> dims, float start) {
  while (dims.size() < 4) dims.insert(dims.begin(), 1);
  BlobProto* blob = blobs->Add();
  blob->set_num(dims[0]), blob->set_channels(dims[1]), blob->set_height(dims[2]), blob->set_width(dims[3]);
  for (int i = 0; i < dims[0] * dims[1] * dims[2] * dims[3]; ++i) blob->add_data(start + 0.01f * i);
}

void ExpectWeightsLoaded(const Net& net) {
  const auto& conv = net.layer_by_name("conv1")->blobs();
  const auto& ip = net.layer_by_name("ip")->blobs();
  EXPECT_FLOAT_EQ(conv[0]->data()[5], 1.05f);
  EXPECT_FLOAT_EQ(conv[1]->data()[2], 2.02f);
  EXPECT_FLOAT_EQ(ip[0]->data()[47], 3.47f);
  EXPECT_FLOAT_EQ(ip[1]->data()[3], 4.03f);
}

}  // namespace

TEST(UpgradeWeights, V1AndV0CaffemodelsLoadIntoACurrentNet) {
  NetParameter v1;
  v1.set_name("small");
  V1LayerParameter* data = v1.add_layers();
  data->set_name("data");
  data->set_type(V1LayerParameter::DATA);
  V1LayerParameter* conv = v1.add_layers();
  conv->set_name("conv1");
  conv->set_type(V1LayerParameter::CONVOLUTION);
  AddBlob(conv->mutable_blobs(), {3, 1, 3, 3}, 1.0f);
  AddBlob(conv->mutable_blobs(), {3}, 2.0f);
  V1LayerParameter* ip = v1.add_layers();
  ip->set_name("ip");
  ip->set_type(V1LayerParameter::INNER_PRODUCT);
  AddBlob(ip->mutable_blobs(), {4, 48}, 3.0f);
  AddBlob(ip->mutable_blobs(), {4}, 4.0f);
  // The same weights in V0 form: names and blobs inside the nested V0 layer.
  NetParameter v0;
  for (const auto& layer : v1.layers()) {
    V0LayerParameter* old = v0.add_layers()->mutable_layer();
    old->set_name(layer.name());
    const auto type = layer.type();
    old->set_type(type == V1LayerParameter::DATA ? "data" : type == V1LayerParameter::CONVOLUTION ? "conv" : "innerproduct");
    *old->mutable_blobs() = layer.blobs();
  }
  const std::string dir = NewTempDir();
  WriteProtoToBinaryFile(v1, dir + "/v1.caffemodel");
  WriteProtoToBinaryFile(v0, dir + "/v0.caffemodel");
  for (const std::string file : {"/v1.caffemodel", "/v0.caffemodel"}) {
    Context ctx(Device::kCPU, 1);
    Net net(Parse(kSmallModern), ctx, "small");
    net.AllocateOwnArena();
    net.CopyTrainedLayersFrom(dir + file);
    ExpectWeightsLoaded(net);
  }
  // From a NetParameter in memory too.
  Context ctx(Device::kCPU, 1);
  Net net(Parse(kSmallModern), ctx, "small");
  net.AllocateOwnArena();
  net.CopyTrainedLayersFrom(v1);
  ExpectWeightsLoaded(net);
  // And through the trainer: test scores the current net with the V1 weights.
  WriteFile(dir + "/small.prototxt", kSmallModern);
  const auto tested = RunCommand(ToolPath("trainer") + " test --model=" + dir + "/small.prototxt --weights=" + dir +
                                 "/v1.caffemodel --iterations=1");
  ASSERT_EQ(tested.exit_code, 0) << tested.err;
  EXPECT_TRUE(Has(tested.err, "Attempting to upgrade input file specified using deprecated V1LayerParameter: " +
                                  dir + "/v1.caffemodel")) << tested.err;
  EXPECT_TRUE(Has(tested.err, "Copying source layer conv1"));
}

TEST(UpgradeTrainer, UpgradeCommandRoundTripsTextAndBinary) {
  const std::string dir = NewTempDir();
  WriteFile(dir + "/lenet_v1.prototxt", kV1LeNet);
  const auto r = RunCommand(ToolPath("trainer") + " upgrade --model=" + dir + "/lenet_v1.prototxt --output=" + dir +
                            "/lenet.prototxt");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.err, "Wrote upgraded NetParameter text proto to " + dir + "/lenet.prototxt")) << r.err;
  NetParameter written;
  ReadProtoFromTextFile(dir + "/lenet.prototxt", &written);
  ExpectSameNet(Upgraded(kV1LeNet), written);
  EXPECT_FALSE(Has(ReadFile(dir + "/lenet.prototxt"), "layers {"));
  // A current file goes through unchanged, saying so.
  const auto again = RunCommand(ToolPath("trainer") + " upgrade --model=" + dir + "/lenet.prototxt --output=" + dir +
                                "/lenet2.prototxt");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_TRUE(Has(again.err, "File already in latest proto format: " + dir + "/lenet.prototxt"));
  EXPECT_EQ(ReadFile(dir + "/lenet.prototxt"), ReadFile(dir + "/lenet2.prototxt"));
  // A .caffemodel is read and written in binary, its blobs kept.
  NetParameter v1 = Parse("name: 'w' layers { name: 'ip' type: INNER_PRODUCT blobs { shape { dim: 2 } data: 1.5 data: -2 } }");
  WriteProtoToBinaryFile(v1, dir + "/old.caffemodel");
  const auto binary = RunCommand(ToolPath("trainer") + " upgrade --model=" + dir + "/old.caffemodel --output=" + dir +
                                 "/new.caffemodel");
  ASSERT_EQ(binary.exit_code, 0) << binary.err;
  NetParameter read;
  ReadProtoFromBinaryFile(dir + "/new.caffemodel", &read);
  ExpectSameNet(Parse("name: 'w' layer { name: 'ip' type: 'InnerProduct' blobs { shape { dim: 2 } data: 1.5 data: -2 } }"),
                read);
  // Mistakes: one line each.
  EXPECT_TRUE(Has(TrainerError("upgrade --model=" + dir + "/lenet_v1.prototxt"), "upgrade needs --model="));
  EXPECT_TRUE(Has(TrainerError("upgrade --model=" + dir + "/missing.prototxt --output=" + dir + "/x.prototxt"),
                  "cannot open '" + dir + "/missing.prototxt'"));
  EXPECT_TRUE(Has(TrainerError("frobnicate"), "valid commands: train, test, time, device_query, upgrade"));
}

TEST(UpgradeTrainer, UnknownOrUnsupportedV1TypesGiveOneLineNamingTheLayer) {
  const V1Workspace ws;
  const std::string text = ReadFile(ws.net);
  // Every V1 type now has a Cortado layer (Im2col, HDF5Output and WindowData were the last), so a type
  // Cortado lacks can only come in the current form: the V1 net upgraded by the tool, with relu1 given a
  // type that no Caffe had, is refused in one line naming the file, the layer and the type.
  const std::string upgraded = ws.dir + "/upgraded.prototxt";
  const CommandResult upgrade = RunCommand(ToolPath("trainer") + " upgrade --model=" + ws.net + " --output=" + upgraded);
  ASSERT_EQ(upgrade.exit_code, 0) << upgrade.err;
  std::string with_unknown = ReadFile(upgraded);
  ASSERT_NE(with_unknown.find("type: \"ReLU\""), std::string::npos) << with_unknown;
  with_unknown.replace(with_unknown.find("type: \"ReLU\""), 12, "type: \"Frobnicate\"");
  const std::string unknown = ws.dir + "/unknown_type.prototxt";
  WriteFile(unknown, with_unknown);
  const std::string unsupported = TrainerError("train --solver=" + ws.Solver(unknown, "i"));
  EXPECT_EQ(unsupported.rfind(unknown + ": layer relu1: unknown layer type Frobnicate", 0), 0u) << unsupported;
  // A V1 layer with no type, through upgrade and through train.
  const std::string untyped = ws.dir + "/untyped.prototxt";
  std::string without_type = text;
  without_type.replace(without_type.find("type: RELU "), 11, "");
  WriteFile(untyped, without_type);
  EXPECT_EQ(TrainerError("upgrade --model=" + untyped + " --output=" + ws.dir + "/out.prototxt"),
            untyped + ": layer relu1: V1 layer has no type (give e.g. type: CONVOLUTION)");
  EXPECT_EQ(TrainerError("train --solver=" + ws.Solver(untyped, "u")),
            untyped + ": layer relu1: V1 layer has no type (give e.g. type: CONVOLUTION)");
  // A type name that is not in the enum: the parser names the file, line and column of the layer.
  const std::string bogus = ws.dir + "/bogus.prototxt";
  std::string with_bogus = text;
  with_bogus.replace(with_bogus.find("type: RELU"), 10, "type: RELUX");
  WriteFile(bogus, with_bogus);
  const std::string parse = TrainerError("upgrade --model=" + bogus + " --output=" + ws.dir + "/out.prototxt");
  EXPECT_TRUE(Has(parse, bogus + ":9:")) << parse;
  EXPECT_TRUE(Has(parse, "RELUX")) << parse;
  // A binary V1 model with a type number outside the enum.
  NetParameter binary;
  binary.add_layers()->set_name("mystery");
  binary.mutable_layers(0)->GetReflection()->MutableUnknownFields(binary.mutable_layers(0))->AddVarint(5, 77);
  WriteProtoToBinaryFile(binary, ws.dir + "/mystery.caffemodel");
  EXPECT_EQ(TrainerError("upgrade --model=" + ws.dir + "/mystery.caffemodel --output=" + ws.dir + "/m2.caffemodel"),
            ws.dir + "/mystery.caffemodel: layer mystery: unknown V1 layer type 77");
}

}  // namespace cortado::test
