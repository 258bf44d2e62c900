// layer_registry.cpp — the table of layer types and the "unknown layer type" message (with the
// closest known type, from suggest.hpp, or where a Caffe fork's type comes from).
#include "cortado/layer_registry.hpp"

#include <map>

#include "cortado/error.hpp"
#include "cortado/suggest.hpp"

namespace cortado {

namespace {
std::map<std::string, LayerCreator>& Table() {
  static std::map<std::string, LayerCreator> table;
  return table;
}
}  // namespace

void LayerRegistry::Add(const std::string& type, LayerCreator creator) {
  Table()[type] = std::move(creator);
}

bool LayerRegistry::Has(const std::string& type) { return Table().count(type) > 0; }

std::vector<std::string> LayerRegistry::Types() {
  std::vector<std::string> types;
  for (const auto& entry : Table()) types.push_back(entry.first);
  return types;
}

namespace {

// Layer types of well-known Caffe forks, which real prototxts carry: where each comes from, and what
// Cortado has instead where there is something.
struct ForeignType {
  const char* type;
  const char* origin;
  const char* instead;  // "" when Cortado has nothing like it
};
constexpr ForeignType kForeignTypes[] = {
    {"AnnotatedData", "SSD (weiliu89/caffe)", ""},
    {"DetectionEvaluate", "SSD (weiliu89/caffe)", ""},
    {"DetectionOutput", "SSD (weiliu89/caffe)", ""},
    {"MultiBoxLoss", "SSD (weiliu89/caffe)", ""},
    {"Normalize", "SSD (weiliu89/caffe)", ""},
    {"Permute", "SSD (weiliu89/caffe)", ""},
    {"PriorBox", "SSD (weiliu89/caffe)", ""},
    {"VideoData", "SSD (weiliu89/caffe)", ""},
    {"SmoothL1Loss", "Fast/Faster R-CNN (rbgirshick/caffe-fast-rcnn) and SSD", ""},
    {"ROIPooling", "Fast/Faster R-CNN (rbgirshick/caffe-fast-rcnn)", ""},
    {"PSROIPooling", "R-FCN (daijifeng001/caffe-rfcn)", ""},
    {"BN", "the batch-normalisation forks (bn_param: SegNet's caffe-segnet, yjxiong/caffe)",
     "use BatchNorm followed by Scale (bias_term: true)"},
    {"DenseImageData", "SegNet (alexgkendall/caffe-segnet)", ""},
    {"Upsample", "SegNet (alexgkendall/caffe-segnet)", ""},
    {"Interp", "DeepLab and PSPNet (hszhao/PSPNet)", ""},
    {"ShuffleChannel", "ShuffleNet's Caffe forks (farmingyard/ShuffleNet)", ""},
    {"ConvolutionDepthwise", "MobileNet's Caffe forks (farmingyard/caffe-mobilenet)",
     "use Convolution with group equal to the input channels"},
    {"DepthwiseConvolution", "MobileNet's Caffe forks (yonghenglh6/DepthwiseConvolution)",
     "use Convolution with group equal to the input channels"},
    {"ReLU6", "MobileNet's Caffe forks", "use Clip with min: 0 max: 6"},
    {"Reorg", "YOLO's Caffe forks", ""},
    {"Region", "YOLO's Caffe forks", ""},
    {"Python", "Caffe's optional Python layers (python_param, built WITH_PYTHON_LAYER)",
     "this program runs no Python layers: trainer and the cortado Python package run them when "
     "Cortado is built with Python (pybind11-dev, python3-dev; scripts/install_deps.sh)"},
};

const ForeignType* FindForeign(const std::string& type) {
  for (const ForeignType& foreign : kForeignTypes)
    if (type == foreign.type) return &foreign;
  return nullptr;
}

}  // namespace

bool LayerRegistry::IsForeign(const std::string& type) { return FindForeign(type) != nullptr && !Has(type); }

std::string LayerRegistry::UnknownTypeMessage(const std::string& type) {
  if (const ForeignType* foreign = FindForeign(type)) {
    std::string message = "type '" + type + "' is not a Cortado layer; it comes from ";
    message += type == "Python" ? "" : "a Caffe fork: ";
    message += foreign->origin;
    if (*foreign->instead) message += std::string("; ") + foreign->instead;
    return message;
  }
  std::string known;
  for (const auto& entry : Table()) known += (known.empty() ? "" : ", ") + entry.first;
  const std::string closest = ClosestMatch(type, Types());
  return "unknown layer type " + type + " (known types: " + known + ")" +
         (closest.empty() ? "" : "; did you mean " + closest + "?");
}

std::unique_ptr<Layer> LayerRegistry::Create(const LayerParameter& param, Context& ctx) {
  auto it = Table().find(param.type());
  if (it != Table().end()) return it->second(param, ctx);
  Fail("layer ", param.name(), ": ", UnknownTypeMessage(param.type()));
}

}  // namespace cortado
