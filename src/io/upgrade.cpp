// upgrade.cpp — V0 and V1 nets (and their old data-transform, input_dim and BatchNorm fields) into the
// current `layer` form, step by step in Caffe's order: V0 → V1, V1 data transforms, V1 → current,
// input_dim, BatchNorm. See upgrade.hpp.
#include "cortado/upgrade.hpp"

#include <glog/logging.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/unknown_field_set.h>

#include <map>

#include "cortado/error.hpp"

namespace cortado {

namespace {

namespace pb = google::protobuf;

// "conv1", or "#3 (unnamed)" for the layer at index 3 when it has no name.
std::string Label(const std::string& name, int index) {
  return name.empty() ? "#" + std::to_string(index) + " (unnamed)" : name;
}

// ---- V0 → V1 ------------------------------------------------------------------------------------

// Caffe's V0 type strings; NONE for any other.
V1LayerParameter::LayerType V0TypeToV1(const std::string& type) {
  static const std::map<std::string, V1LayerParameter::LayerType> kTypes = {
      {"accuracy", V1LayerParameter::ACCURACY},
      {"bnll", V1LayerParameter::BNLL},
      {"concat", V1LayerParameter::CONCAT},
      {"conv", V1LayerParameter::CONVOLUTION},
      {"data", V1LayerParameter::DATA},
      {"dropout", V1LayerParameter::DROPOUT},
      {"euclidean_loss", V1LayerParameter::EUCLIDEAN_LOSS},
      {"flatten", V1LayerParameter::FLATTEN},
      {"hdf5_data", V1LayerParameter::HDF5_DATA},
      {"hdf5_output", V1LayerParameter::HDF5_OUTPUT},
      {"im2col", V1LayerParameter::IM2COL},
      {"images", V1LayerParameter::IMAGE_DATA},
      {"infogain_loss", V1LayerParameter::INFOGAIN_LOSS},
      {"innerproduct", V1LayerParameter::INNER_PRODUCT},
      {"lrn", V1LayerParameter::LRN},
      {"multinomial_logistic_loss", V1LayerParameter::MULTINOMIAL_LOGISTIC_LOSS},
      {"pool", V1LayerParameter::POOLING},
      {"relu", V1LayerParameter::RELU},
      {"sigmoid", V1LayerParameter::SIGMOID},
      {"softmax", V1LayerParameter::SOFTMAX},
      {"softmax_loss", V1LayerParameter::SOFTMAX_LOSS},
      {"split", V1LayerParameter::SPLIT},
      {"tanh", V1LayerParameter::TANH},
      {"window_data", V1LayerParameter::WINDOW_DATA},
  };
  auto it = kTypes.find(type);
  return it == kTypes.end() ? V1LayerParameter::NONE : it->second;
}

bool NeedsV0Upgrade(const NetParameter& net) {
  for (const auto& layer : net.layers())
    if (layer.has_layer()) return true;
  return false;
}

// Removes V0 "padding" layers, giving their pad to the conv or pool layer they feed (Caffe's
// UpgradeV0PaddingLayers).
void FoldV0Padding(NetParameter* net, const std::string& source) {
  pb::RepeatedPtrField<V1LayerParameter> old;
  old.Swap(net->mutable_layers());
  std::map<std::string, int> last_top;  // blob -> index in `old` of the layer that last produced it
  for (const auto& input : net->input()) last_top[input] = -1;
  for (int i = 0; i < old.size(); ++i) {
    const bool padding = old[i].layer().type() == "padding";
    V1LayerParameter* kept = nullptr;
    if (!padding) {
      kept = net->add_layers();
      kept->Swap(&old[i]);  // padding layers stay in `old`: later layers look them up
    }
    const V1LayerParameter& layer = padding ? old[i] : *kept;
    const std::string name = Label(layer.layer().name(), i);
    for (int j = 0; j < layer.bottom_size(); ++j) {
      auto it = last_top.find(layer.bottom(j));
      CORTADO_REQUIRE(it != last_top.end(), source, ": layer ", name, ": bottom '", layer.bottom(j),
                      "' is not produced by any earlier layer");
      if (it->second < 0 || old[it->second].layer().type() != "padding") continue;
      const V1LayerParameter& pad = old[it->second];
      const std::string& type = layer.layer().type();
      CORTADO_REQUIRE(type == "conv" || type == "pool", source, ": layer ", name, ": a V0 padding layer "
                      "feeds this '", type, "' layer, but only conv and pool layers take padding");
      CORTADO_REQUIRE(layer.bottom_size() == 1 && pad.bottom_size() == 1 && pad.top_size() == 1, source,
                      ": layer ", name, ": a V0 padding layer and the layer it pads take one bottom each");
      kept->mutable_layer()->set_pad(pad.layer().pad());
      kept->set_bottom(j, pad.bottom(0));
    }
    for (const auto& top : layer.top()) last_top[top] = i;
  }
}

// One V0 layer (a V1 entry whose `layer` holds it) as a V1 layer (Caffe's UpgradeV0LayerParameter).
// Settings the type does not take are dropped with a warning; *compatible becomes false.
V1LayerParameter UpgradeV0Layer(V1LayerParameter* connection, int index, const std::string& source,
                                bool* compatible) {
  V1LayerParameter out;
  *out.mutable_bottom() = connection->bottom();
  *out.mutable_top() = connection->top();
  if (!connection->has_layer()) return out;
  V0LayerParameter* v0 = connection->mutable_layer();
  const std::string& type = v0->type();
  const std::string name = Label(v0->name(), index);
  if (v0->has_name()) out.set_name(v0->name());
  if (v0->has_type()) {
    const V1LayerParameter::LayerType v1_type = V0TypeToV1(type);
    CORTADO_REQUIRE(v1_type != V1LayerParameter::NONE, source, ": layer ", name, ": unknown V0 layer type '",
                    type, "'");
    out.set_type(v1_type);
  }
  out.mutable_blobs()->Swap(v0->mutable_blobs());
  *out.mutable_blobs_lr() = v0->blobs_lr();
  *out.mutable_weight_decay() = v0->weight_decay();
  auto drop = [&](const char* field) {
    LOG(WARNING) << source << ": layer " << name << ": ignoring V0 field " << field
                 << ", which a '" << type << "' layer does not take";
    *compatible = false;
  };
  const bool conv = type == "conv", ip = type == "innerproduct", pool = type == "pool";
  const bool data = type == "data", hdf5 = type == "hdf5_data", images = type == "images";
  const bool window = type == "window_data", lrn = type == "lrn";
  if (v0->has_num_output()) {
    if (conv) out.mutable_convolution_param()->set_num_output(v0->num_output());
    else if (ip) out.mutable_inner_product_param()->set_num_output(v0->num_output());
    else drop("num_output");
  }
  if (v0->has_biasterm()) {
    if (conv) out.mutable_convolution_param()->set_bias_term(v0->biasterm());
    else if (ip) out.mutable_inner_product_param()->set_bias_term(v0->biasterm());
    else drop("biasterm");
  }
  if (v0->has_weight_filler()) {
    if (conv) *out.mutable_convolution_param()->mutable_weight_filler() = v0->weight_filler();
    else if (ip) *out.mutable_inner_product_param()->mutable_weight_filler() = v0->weight_filler();
    else drop("weight_filler");
  }
  if (v0->has_bias_filler()) {
    if (conv) *out.mutable_convolution_param()->mutable_bias_filler() = v0->bias_filler();
    else if (ip) *out.mutable_inner_product_param()->mutable_bias_filler() = v0->bias_filler();
    else drop("bias_filler");
  }
  if (v0->has_pad()) {
    if (conv) out.mutable_convolution_param()->add_pad(v0->pad());
    else if (pool) out.mutable_pooling_param()->set_pad(v0->pad());
    else drop("pad");
  }
  if (v0->has_kernelsize()) {
    if (conv) out.mutable_convolution_param()->add_kernel_size(v0->kernelsize());
    else if (pool) out.mutable_pooling_param()->set_kernel_size(v0->kernelsize());
    else drop("kernelsize");
  }
  if (v0->has_group()) {
    if (conv) out.mutable_convolution_param()->set_group(v0->group());
    else drop("group");
  }
  if (v0->has_stride()) {
    if (conv) out.mutable_convolution_param()->add_stride(v0->stride());
    else if (pool) out.mutable_pooling_param()->set_stride(v0->stride());
    else drop("stride");
  }
  if (v0->has_pool()) {
    // V0's MAX, AVE, STOCHASTIC have PoolingParameter's numbers.
    if (pool) out.mutable_pooling_param()->set_pool(static_cast<PoolingParameter::PoolMethod>(v0->pool()));
    else drop("pool");
  }
  if (v0->has_dropout_ratio()) {
    if (type == "dropout") out.mutable_dropout_param()->set_dropout_ratio(v0->dropout_ratio());
    else drop("dropout_ratio");
  }
  if (v0->has_local_size()) {
    if (lrn) out.mutable_lrn_param()->set_local_size(v0->local_size());
    else drop("local_size");
  }
  if (v0->has_alpha()) {
    if (lrn) out.mutable_lrn_param()->set_alpha(v0->alpha());
    else drop("alpha");
  }
  if (v0->has_beta()) {
    if (lrn) out.mutable_lrn_param()->set_beta(v0->beta());
    else drop("beta");
  }
  if (v0->has_k()) {
    if (lrn) out.mutable_lrn_param()->set_k(v0->k());
    else drop("k");
  }
  if (v0->has_source()) {
    if (data) out.mutable_data_param()->set_source(v0->source());
    else if (hdf5) out.mutable_hdf5_data_param()->set_source(v0->source());
    else if (images) out.mutable_image_data_param()->set_source(v0->source());
    else if (window) out.mutable_window_data_param()->set_source(v0->source());
    else if (type == "infogain_loss") out.mutable_infogain_loss_param()->set_source(v0->source());
    else drop("source");
  }
  // The transform settings go to transform_param whatever the type, as in Caffe.
  if (v0->has_scale()) out.mutable_transform_param()->set_scale(v0->scale());
  if (v0->has_meanfile()) out.mutable_transform_param()->set_mean_file(v0->meanfile());
  if (v0->has_cropsize()) out.mutable_transform_param()->set_crop_size(v0->cropsize());
  if (v0->has_mirror()) out.mutable_transform_param()->set_mirror(v0->mirror());
  if (v0->has_batchsize()) {
    if (data) out.mutable_data_param()->set_batch_size(v0->batchsize());
    else if (hdf5) out.mutable_hdf5_data_param()->set_batch_size(v0->batchsize());
    else if (images) out.mutable_image_data_param()->set_batch_size(v0->batchsize());
    else if (window) out.mutable_window_data_param()->set_batch_size(v0->batchsize());
    else drop("batchsize");
  }
  if (v0->has_rand_skip()) {
    if (data) out.mutable_data_param()->set_rand_skip(v0->rand_skip());
    else if (images) out.mutable_image_data_param()->set_rand_skip(v0->rand_skip());
    else drop("rand_skip");
  }
  if (v0->has_shuffle_images()) {
    if (images) out.mutable_image_data_param()->set_shuffle(v0->shuffle_images());
    else drop("shuffle_images");
  }
  if (v0->has_new_height()) {
    if (images) out.mutable_image_data_param()->set_new_height(v0->new_height());
    else drop("new_height");
  }
  if (v0->has_new_width()) {
    if (images) out.mutable_image_data_param()->set_new_width(v0->new_width());
    else drop("new_width");
  }
  if (v0->has_concat_dim()) {
    if (type == "concat") out.mutable_concat_param()->set_concat_dim(v0->concat_dim());
    else drop("concat_dim");
  }
  if (v0->has_det_fg_threshold()) {
    if (window) out.mutable_window_data_param()->set_fg_threshold(v0->det_fg_threshold());
    else drop("det_fg_threshold");
  }
  if (v0->has_det_bg_threshold()) {
    if (window) out.mutable_window_data_param()->set_bg_threshold(v0->det_bg_threshold());
    else drop("det_bg_threshold");
  }
  if (v0->has_det_fg_fraction()) {
    if (window) out.mutable_window_data_param()->set_fg_fraction(v0->det_fg_fraction());
    else drop("det_fg_fraction");
  }
  if (v0->has_det_context_pad()) {
    if (window) out.mutable_window_data_param()->set_context_pad(v0->det_context_pad());
    else drop("det_context_pad");
  }
  if (v0->has_det_crop_mode()) {
    if (window) out.mutable_window_data_param()->set_crop_mode(v0->det_crop_mode());
    else drop("det_crop_mode");
  }
  if (v0->has_hdf5_output_param()) {
    if (type == "hdf5_output") *out.mutable_hdf5_output_param() = v0->hdf5_output_param();
    else drop("hdf5_output_param");
  }
  return out;
}

// Returns whether every V0 setting found a place. Net-level fields other than the layers stay.
bool UpgradeV0Net(NetParameter* net, const std::string& source) {
  FoldV0Padding(net, source);
  pb::RepeatedPtrField<V1LayerParameter> v0_layers;
  v0_layers.Swap(net->mutable_layers());
  bool compatible = true;
  for (int i = 0; i < v0_layers.size(); ++i)
    *net->add_layers() = UpgradeV0Layer(&v0_layers[i], i, source, &compatible);
  return compatible;
}

// ---- V1 data layers: legacy transform fields → transform_param ----------------------------------

template <typename P>
bool HasLegacyTransform(const P& p) {
  return p.has_scale() || p.has_mean_file() || p.has_crop_size() || p.has_mirror();
}

template <typename P>
void MoveLegacyTransform(P* p, TransformationParameter* t) {
  if (p->has_scale()) t->set_scale(p->scale());
  if (p->has_mean_file()) t->set_mean_file(p->mean_file());
  if (p->has_crop_size()) t->set_crop_size(p->crop_size());
  if (p->has_mirror()) t->set_mirror(p->mirror());
  p->clear_scale();
  p->clear_mean_file();
  p->clear_crop_size();
  p->clear_mirror();
}

bool NeedsDataUpgrade(const NetParameter& net) {
  for (const auto& l : net.layers()) {
    if (l.type() == V1LayerParameter::DATA && HasLegacyTransform(l.data_param())) return true;
    if (l.type() == V1LayerParameter::IMAGE_DATA && HasLegacyTransform(l.image_data_param())) return true;
    if (l.type() == V1LayerParameter::WINDOW_DATA && HasLegacyTransform(l.window_data_param())) return true;
  }
  return false;
}

void UpgradeDataTransformation(NetParameter* net) {
  for (auto& l : *net->mutable_layers()) {
    if (l.type() == V1LayerParameter::DATA && l.has_data_param())
      MoveLegacyTransform(l.mutable_data_param(), l.mutable_transform_param());
    if (l.type() == V1LayerParameter::IMAGE_DATA && l.has_image_data_param())
      MoveLegacyTransform(l.mutable_image_data_param(), l.mutable_transform_param());
    if (l.type() == V1LayerParameter::WINDOW_DATA && l.has_window_data_param())
      MoveLegacyTransform(l.mutable_window_data_param(), l.mutable_transform_param());
  }
}

// ---- V1 → current -------------------------------------------------------------------------------

// The type number of a binary V1 layer whose type is not in the enum (protobuf keeps it as an unknown
// field); -1 when there is none.
int64_t UnknownTypeNumber(const V1LayerParameter& v1) {
  const pb::UnknownFieldSet& unknown = v1.GetReflection()->GetUnknownFields(v1);
  for (int k = 0; k < unknown.field_count(); ++k) {
    const pb::UnknownField& field = unknown.field(k);
    if (field.number() == V1LayerParameter::kTypeFieldNumber && field.type() == pb::UnknownField::TYPE_VARINT)
      return static_cast<int64_t>(field.varint());
  }
  return -1;
}

// Every V1 "<x>_param" message (transform_param and loss_param included) is copied to
// LayerParameter's field of the same name and type.
void CopyLayerParams(const V1LayerParameter& v1, LayerParameter* layer) {
  const pb::Descriptor* from = V1LayerParameter::descriptor();
  const pb::Reflection* from_r = v1.GetReflection();
  for (int f = 0; f < from->field_count(); ++f) {
    const pb::FieldDescriptor* field = from->field(f);
    const std::string& name = field->name();
    if (field->type() != pb::FieldDescriptor::TYPE_MESSAGE || field->is_repeated() || name.size() < 6 ||
        name.compare(name.size() - 6, 6, "_param") != 0 || !from_r->HasField(v1, field))
      continue;
    const pb::FieldDescriptor* target = LayerParameter::descriptor()->FindFieldByName(name);
    CHECK(target && target->message_type() == field->message_type())
        << "LayerParameter has no field " << name << " of type " << field->message_type()->full_name();
    layer->GetReflection()->MutableMessage(layer, target)->CopyFrom(from_r->GetMessage(v1, field));
  }
}

// Caffe's UpgradeV1LayerParameter. The V1 layer is emptied (its blobs move).
LayerParameter UpgradeV1Layer(V1LayerParameter* v1, int index, const std::string& source) {
  const std::string name = Label(v1->name(), index);
  if (!v1->has_type()) {
    const int64_t number = UnknownTypeNumber(*v1);
    if (number >= 0) Fail(source, ": layer ", name, ": unknown V1 layer type ", number);
    Fail(source, ": layer ", name, ": V1 layer has no type (give e.g. type: CONVOLUTION)");
  }
  CORTADO_REQUIRE(v1->type() != V1LayerParameter::NONE, source, ": layer ", name,
                  ": V1 layer type NONE names no layer");
  LayerParameter layer;
  if (v1->has_name()) layer.set_name(v1->name());
  layer.set_type(V1LayerTypeName(v1->type()));
  *layer.mutable_bottom() = v1->bottom();
  *layer.mutable_top() = v1->top();
  *layer.mutable_include() = v1->include();
  *layer.mutable_exclude() = v1->exclude();
  layer.mutable_blobs()->Swap(v1->mutable_blobs());
  auto param = [&](int i) {
    while (layer.param_size() <= i) layer.add_param();
    return layer.mutable_param(i);
  };
  for (int i = 0; i < v1->param_size(); ++i) param(i)->set_name(v1->param(i));
  for (int i = 0; i < v1->blob_share_mode_size(); ++i)
    param(i)->set_share_mode(v1->blob_share_mode(i) == V1LayerParameter::PERMISSIVE ? ParamSpec::PERMISSIVE
                                                                                     : ParamSpec::STRICT);
  for (int i = 0; i < v1->blobs_lr_size(); ++i) param(i)->set_lr_mult(v1->blobs_lr(i));
  for (int i = 0; i < v1->weight_decay_size(); ++i) param(i)->set_decay_mult(v1->weight_decay(i));
  *layer.mutable_loss_weight() = v1->loss_weight();
  CopyLayerParams(*v1, &layer);
  return layer;
}

// ---- net-level input_dim, BatchNorm -------------------------------------------------------------

void UpgradeInputDims(NetParameter* net, const std::string& source) {
  if (net->input_shape_size() == 0) {  // with both, Caffe reads input_shape
    CORTADO_REQUIRE(net->input_dim_size() == 4 * net->input_size(), source, ": net has ", net->input_size(),
                    " inputs but ", net->input_dim_size(), " input_dim values; give 4 per input");
    for (int i = 0; i < net->input_size(); ++i) {
      BlobShape* shape = net->add_input_shape();
      for (int d = 0; d < 4; ++d) shape->add_dim(net->input_dim(4 * i + d));
    }
  }
  net->clear_input_dim();
}

// Caffe's test is three ParamSpecs; one already at lr_mult 0, decay_mult 0 needs nothing more.
bool IsOldBatchNorm(const LayerParameter& layer) {
  if (layer.type() != "BatchNorm" || layer.param_size() != 3) return false;
  for (const auto& spec : layer.param())
    if (spec.lr_mult() != 0.0f || spec.decay_mult() != 0.0f) return true;
  return false;
}

bool NeedsBatchNormUpgrade(const NetParameter& net) {
  for (const auto& layer : net.layer())
    if (IsOldBatchNorm(layer)) return true;
  return false;
}

}  // namespace

std::string V1LayerTypeName(V1LayerParameter::LayerType type) {
  switch (type) {
    case V1LayerParameter::NONE: return "";
    case V1LayerParameter::ABSVAL: return "AbsVal";
    case V1LayerParameter::ACCURACY: return "Accuracy";
    case V1LayerParameter::ARGMAX: return "ArgMax";
    case V1LayerParameter::BNLL: return "BNLL";
    case V1LayerParameter::CONCAT: return "Concat";
    case V1LayerParameter::CONTRASTIVE_LOSS: return "ContrastiveLoss";
    case V1LayerParameter::CONVOLUTION: return "Convolution";
    case V1LayerParameter::DATA: return "Data";
    case V1LayerParameter::DECONVOLUTION: return "Deconvolution";
    case V1LayerParameter::DROPOUT: return "Dropout";
    case V1LayerParameter::DUMMY_DATA: return "DummyData";
    case V1LayerParameter::EUCLIDEAN_LOSS: return "EuclideanLoss";
    case V1LayerParameter::ELTWISE: return "Eltwise";
    case V1LayerParameter::EXP: return "Exp";
    case V1LayerParameter::FLATTEN: return "Flatten";
    case V1LayerParameter::HDF5_DATA: return "HDF5Data";
    case V1LayerParameter::HDF5_OUTPUT: return "HDF5Output";
    case V1LayerParameter::HINGE_LOSS: return "HingeLoss";
    case V1LayerParameter::IM2COL: return "Im2col";
    case V1LayerParameter::IMAGE_DATA: return "ImageData";
    case V1LayerParameter::INFOGAIN_LOSS: return "InfogainLoss";
    case V1LayerParameter::INNER_PRODUCT: return "InnerProduct";
    case V1LayerParameter::LRN: return "LRN";
    case V1LayerParameter::MEMORY_DATA: return "MemoryData";
    case V1LayerParameter::MULTINOMIAL_LOGISTIC_LOSS: return "MultinomialLogisticLoss";
    case V1LayerParameter::MVN: return "MVN";
    case V1LayerParameter::POOLING: return "Pooling";
    case V1LayerParameter::POWER: return "Power";
    case V1LayerParameter::RELU: return "ReLU";
    case V1LayerParameter::SIGMOID: return "Sigmoid";
    case V1LayerParameter::SIGMOID_CROSS_ENTROPY_LOSS: return "SigmoidCrossEntropyLoss";
    case V1LayerParameter::SILENCE: return "Silence";
    case V1LayerParameter::SOFTMAX: return "Softmax";
    case V1LayerParameter::SOFTMAX_LOSS: return "SoftmaxWithLoss";
    case V1LayerParameter::SPLIT: return "Split";
    case V1LayerParameter::SLICE: return "Slice";
    case V1LayerParameter::TANH: return "TanH";
    case V1LayerParameter::WINDOW_DATA: return "WindowData";
    case V1LayerParameter::THRESHOLD: return "Threshold";
  }
  return "";
}

bool NetNeedsUpgrade(const NetParameter& param) {
  return param.layers_size() > 0 || param.input_dim_size() > 0 || NeedsBatchNormUpgrade(param);
}

void UpgradeNet(NetParameter* param, const std::string& source) {
  CORTADO_REQUIRE(param->layer_size() == 0 || param->layers_size() == 0, source, ": has both 'layer' "
                  "entries (current form) and legacy V1 'layers' entries; write every layer as "
                  "layer { type: \"Convolution\" ... }");
  if (NeedsV0Upgrade(*param)) {
    LOG(INFO) << "Attempting to upgrade input file specified using deprecated V0LayerParameter: " << source;
    if (UpgradeV0Net(param, source)) {
      LOG(INFO) << "Successfully upgraded file specified using deprecated V0LayerParameter";
    } else {
      LOG(WARNING) << "Warning: had one or more problems upgrading V0NetParameter to NetParameter "
                   << "(see above); continuing anyway.";
    }
  }
  if (NeedsDataUpgrade(*param)) {
    LOG(INFO) << "Attempting to upgrade input file specified using deprecated transformation parameters: "
              << source;
    UpgradeDataTransformation(param);
    LOG(INFO) << "Successfully upgraded file specified using deprecated data transformation parameters.";
  }
  if (param->layers_size() > 0) {
    LOG(INFO) << "Attempting to upgrade input file specified using deprecated V1LayerParameter: " << source;
    pb::RepeatedPtrField<V1LayerParameter> v1_layers;
    v1_layers.Swap(param->mutable_layers());
    for (int i = 0; i < v1_layers.size(); ++i) *param->add_layer() = UpgradeV1Layer(&v1_layers[i], i, source);
    LOG(INFO) << "Successfully upgraded file specified using deprecated V1LayerParameter";
  }
  if (param->input_dim_size() > 0) {
    LOG(INFO) << "Attempting to upgrade input file specified using deprecated input fields: " << source;
    UpgradeInputDims(param, source);
    LOG(INFO) << "Successfully upgraded file specified using deprecated input fields.";
  }
  if (NeedsBatchNormUpgrade(*param)) {
    LOG(INFO) << "Attempting to upgrade batch norm layers using deprecated params: " << source;
    for (auto& layer : *param->mutable_layer()) {
      if (!IsOldBatchNorm(layer)) continue;
      for (auto& spec : *layer.mutable_param()) {
        spec.set_lr_mult(0.0f);
        spec.set_decay_mult(0.0f);
      }
    }
    LOG(INFO) << "Successfully upgraded batch norm layers using deprecated params.";
  }
}

}  // namespace cortado
