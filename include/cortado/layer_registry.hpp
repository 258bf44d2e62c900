// layer_registry.hpp — layers by Caffe's type string ("Convolution", "ReLU", ...).
//
// Each layer registers itself with one line at the bottom of its own .cpp file:
//   CORTADO_REGISTER_LAYER(ReLU, ReLULayer);
// The library holding the layers is linked whole into every binary, so registration always runs.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cortado/layer.hpp"

namespace cortado {

using LayerCreator = std::function<std::unique_ptr<Layer>(const LayerParameter&, Context&)>;

class LayerRegistry {
 public:
  static void Add(const std::string& type, LayerCreator creator);
  // Throws Error "layer X: unknown layer type Y (known types: ...; did you mean Z?)".
  static std::unique_ptr<Layer> Create(const LayerParameter& param, Context& ctx);
  static std::vector<std::string> Types();  // sorted
  static bool Has(const std::string& type);
  // Why `type` cannot be built: for a Caffe fork's type (SSD's PriorBox, the BN forks' BN, ...)
  // "type 'PriorBox' is not a Cortado layer; it comes from a Caffe fork: SSD (weiliu89/caffe)", with
  // what to use instead where Cortado has something; otherwise "unknown layer type X (known types:
  // ...)" with the closest known type.
  static std::string UnknownTypeMessage(const std::string& type);
  // Whether `type` is one of the Caffe forks' types UnknownTypeMessage knows.
  static bool IsForeign(const std::string& type);
};

struct LayerRegistration {
  LayerRegistration(const char* type, LayerCreator creator) { LayerRegistry::Add(type, std::move(creator)); }
};

#define CORTADO_REGISTER_LAYER(type_name, LayerClass)                                       \
  static ::cortado::LayerRegistration registration_##type_name(                             \
      #type_name, [](const ::cortado::LayerParameter& p, ::cortado::Context& c) {            \
        return std::unique_ptr<::cortado::Layer>(new LayerClass(p, c));                      \
      })

}  // namespace cortado
