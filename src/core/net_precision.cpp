// net_precision.cpp — the storage of a net's blobs, their types and layouts, and the Cast layers where
// they change (net_rules.hpp, PlanStorage).
//
// Types. Each layer has a storage type for its tops' data (forward_type) and for their diffs
// (backward_type): its own fields, else the net's defaults (NVIDIA Caffe's names). Three kinds of layers:
//   - layers that keep float whatever the net says: data layers, losses, Softmax, Accuracy, ArgMax, a
//     MAX pooling with its argmax top, and the layers that hand values to the user (their values are
//     labels, probabilities, indices);
//   - layers that only move values (Split, Flatten, Reshape): their tops keep their bottom's types;
//   - all others store their tops in the types asked for.
// A layer computes on the types it supports (ComputesOn: element-wise layers, Split, BatchNorm, Scale,
// and MAX and AVE pooling on any, on either device; convolutions where cuDNN (bf16, fp16) or oneDNN
// (bf16) runs them; inner products on the GPU): where its computation reads another type than its
// bottom holds, a Cast converts the bottom first; where it writes another type than its tops are to be
// stored in, a Cast converts its output. A layer without 16-bit arithmetic of its own thus computes in
// float between two Casts, and its tops are rounded to 16 bits, as a 16-bit layer's would be.
//
// Layouts. With NetParameter.layout NHWC, the layers that compute channels-last (channels_last.hpp:
// convolutions, BatchNorm and Scale over the channels on either device; MAX and AVE pooling on the
// GPU) do, element-wise layers (and Split) follow their first bottom's layout, and every other layer
// reads NCHW: a Cast transposes a bottom whose layout is not the one its reader computes in. A layer's
// tops are in the layout it computed in.
//
// A blob's last version keeps the blob's name, so tools and scripts find it by name.
#include <map>
#include <set>
#include <vector>

#include "../layers/channels_last.hpp"
#include "cortado/error.hpp"
#include "cortado/net.hpp"
#include "net_rules.hpp"

namespace cortado {

namespace {

struct Storage {
  Type data = FLOAT, diff = FLOAT;
  Packing layout = NCHW;
  bool operator==(const Storage& o) const { return data == o.data && diff == o.diff && layout == o.layout; }
  bool operator!=(const Storage& o) const { return !(*this == o); }
};

bool IsLoss(const std::string& type) {
  return type.size() > 4 && type.compare(type.size() - 4, 4, "Loss") == 0;
}

bool KeepsFloat(const LayerParameter& layer) {
  static const std::set<std::string> kFloat = {"Softmax", "Accuracy", "ArgMax", "Python", "HDF5Output", "Silence"};
  // A MAX pooling's second top holds argmax indices (h·W + w), which 16 bits would round.
  const bool indices = layer.type() == "Pooling" && layer.top_size() > 1;
  return layer.bottom_size() == 0 || IsLoss(layer.type()) || kFloat.count(layer.type()) > 0 || indices;
}

bool FollowsBottom(const std::string& type) { return type == "Split" || type == "Flatten" || type == "Reshape"; }

// Whether a layer's own arithmetic reads and writes data of type `data` and diffs of type `diff`.
bool ComputesOn(const LayerParameter& layer, Type data, Type diff, Device device) {
  if (data == FLOAT && diff == FLOAT) return true;
  const std::string& type = layer.type();
  if (type == "Cast" || type == "Flatten" || type == "Reshape") return true;  // conversions and views of any types
  if (data != diff) return false;  // the others' 16-bit arithmetic reads and writes one storage type
  // Element-wise layers whose functors run over any storage type (MapStored), on either device.
  if (type == "ReLU" || type == "Sigmoid" || type == "TanH" || type == "Split") return true;
  if (type == "Eltwise") return layer.eltwise_param().operation() == EltwiseParameter::SUM;
  // Per-channel layers whose functors and sums run over any storage type (MapChannels, ChannelSums),
  // BatchNorm's scale_bias chain included; a Scale whose γ is a second bottom is float only.
  if (type == "BatchNorm") return true;
  if (type == "Scale") return layer.bottom_size() == 1;
  if (type == "InnerProduct") return device == Device::kGPU;  // cuBLAS on 16-bit operands
  if (type == "Pooling") return PoolingComputesOn(layer, data, device);
  return type == "Convolution" && ConvolutionComputesOn(layer, data, device);
}

// Layers whose every output element depends on the same element of each input: any layout will do.
bool ElementWise(const std::string& type) {
  static const std::set<std::string> kElementWise = {"ReLU",  "Sigmoid",   "TanH", "AbsVal", "BNLL",  "ELU",
                                                     "Exp",   "Log",       "Power", "Threshold", "Clip", "Swish",
                                                     "Dropout", "Eltwise", "Split"};
  return kElementWise.count(type) > 0;
}

bool ComputesChannelsLast(const LayerParameter& layer, Device device) {
  if (layer.type() == "Convolution") return ConvolutionRunsChannelsLast(layer, device);
  if (layer.type() == "Pooling") return PoolingRunsChannelsLast(layer, device);
  if (layer.type() == "BatchNorm") return true;
  if (layer.type() == "Scale") {
    const ScaleParameter& p = layer.scale_param();
    return layer.bottom_size() == 1 && p.axis() == 1 && p.num_axes() == 1;
  }
  return false;
}

Type StorageType(Type type, const std::string& where) {
  switch (type) {
    case FLOAT:
    case DOUBLE:  // Cortado computes in float
      return FLOAT;
    case FLOAT16:
    case BFLOAT16:
      return type;
    default:
      Fail(where, ": ", Type_Name(type), " is not a storage type of a layer's blobs; use FLOAT, FLOAT16 or BFLOAT16");
  }
}

std::string Describe(const Storage& s) {
  std::string text = s.data == FLOAT ? "float" : s.data == FLOAT16 ? "fp16" : "bf16";
  if (s.diff != s.data) text += s.diff == FLOAT ? "/float" : s.diff == FLOAT16 ? "/fp16" : "/bf16";
  return text + (s.layout == NHWC ? " NHWC" : "");
}

}  // namespace

void SetNetPrecision(NetParameter* param, Type precision) {
  CORTADO_REQUIRE(precision == FLOAT || precision == BFLOAT16 || precision == FLOAT16, "precision ",
                  Type_Name(precision), " is not a storage type; use FLOAT, BFLOAT16 or FLOAT16");
  param->set_default_forward_type(precision);
  param->set_default_backward_type(precision);
  if (precision == FLOAT16 && !param->has_global_grad_scale() && !param->global_grad_scale_adaptive())
    param->set_global_grad_scale_dynamic(true);
}

bool NetIsMixedPrecision(const NetParameter& param) {
  auto reduced = [](Type t) { return t == FLOAT16 || t == BFLOAT16; };
  if (reduced(param.default_forward_type()) || reduced(param.default_backward_type())) return true;
  for (const LayerParameter& layer : param.layer())
    if (reduced(layer.forward_type()) || reduced(layer.backward_type())) return true;
  return false;
}

NetParameter PlanStorage(const NetParameter& param, Device device, const std::string& source) {
  const bool channels_last = param.layout() == NHWC;
  if (!NetIsMixedPrecision(param) && !channels_last) return param;  // a float NCHW net is left as it is
  const Storage defaults{StorageType(param.default_forward_type(), source + ": default_forward_type"),
                         StorageType(param.default_backward_type(), source + ": default_backward_type")};
  NetParameter out(param);
  out.clear_layer();
  struct Version {
    std::string name;  // the blob that holds it now
    Storage storage;
  };
  std::map<std::string, Version> current;  // blob name in the prototxt -> its latest version
  // Blob name -> its versions, in order: (the blob holding it, the layer that wrote it).
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> versions;
  auto add_cast = [&](const std::string& from, const Storage& to, const std::string& to_name, const LayerParameter& near) {
    LayerParameter* cast = out.add_layer();
    cast->set_name(from + " as " + Describe(to) + (near.name().empty() ? "" : " for " + near.name()));
    cast->set_type("Cast");
    cast->add_bottom(from);
    cast->add_top(to_name);
    cast->set_forward_type(to.data);
    cast->set_backward_type(to.diff);
    cast->set_layout(to.layout);
    if (near.has_phase()) cast->set_phase(near.phase());
  };
  for (const LayerParameter& in : param.layer()) {
    const std::string where = source + ": layer " + in.name();
    Storage asked = defaults;
    if (in.has_forward_type()) asked.data = StorageType(in.forward_type(), where + ": forward_type");
    if (in.has_backward_type()) asked.diff = StorageType(in.backward_type(), where + ": backward_type");
    if (KeepsFloat(in)) asked = Storage{};
    std::vector<Storage> bottom_storage;
    for (const std::string& bottom : in.bottom()) {
      CORTADO_REQUIRE(current.count(bottom), where, " (", in.type(), "): bottom '", bottom,
                      "' is not produced by any earlier layer");
      bottom_storage.push_back(current[bottom].storage);
    }
    // How the tops are stored, and what the layer computes on.
    Storage stored = asked;
    if (FollowsBottom(in.type()) && !bottom_storage.empty()) {
      stored.data = bottom_storage[0].data;
      stored.diff = bottom_storage[0].diff;
    }
    Storage computes;
    if (ComputesOn(in, stored.data, stored.diff, device)) computes = stored;
    computes.layout = NCHW;
    if (ElementWise(in.type()) && !bottom_storage.empty()) {
      computes.layout = bottom_storage[0].layout;
    } else if (channels_last && ComputesChannelsLast(in, device)) {
      computes.layout = NHWC;
    }
    const bool converts = in.type() == "Cast";  // a Cast of the prototxt's: reads any storage, writes as it says
    if (converts) computes.layout = in.layout();
    stored.layout = computes.layout;  // tops stay in the layout they were computed in
    LayerParameter layer(in);
    layer.set_forward_type(computes.data);
    layer.set_backward_type(computes.diff);
    layer.set_layout(computes.layout);
    std::vector<std::string> bottom_names;  // what the layer reads, after any Cast
    for (int j = 0; j < in.bottom_size(); ++j) {
      const Version& have = current[in.bottom(j)];
      std::string name = have.name;
      if (have.storage != computes && !converts) {
        name = in.bottom(j) + " (" + Describe(computes) + " for " + in.name() + ")";
        add_cast(have.name, computes, name, in);
      }
      bottom_names.push_back(name);
      layer.set_bottom(j, name);
    }
    // The layer's tops; Casts after it store them in their types.
    struct PendingCast {
      std::string from, to;
    };
    std::vector<PendingCast> after;
    for (int j = 0; j < in.top_size(); ++j) {
      const std::string& top = in.top(j);
      const bool in_place = j < in.bottom_size() && in.bottom(j) == top;
      std::string written = in_place ? bottom_names[j] : top;
      if (computes != stored) {
        if (!in_place) written = top + " (" + Describe(computes) + " from " + in.name() + ")";
        const std::string kept = versions.count(top) ? top + " (" + Describe(stored) + " after " + in.name() + ")" : top;
        after.push_back({written, kept});
        current[top] = {kept, stored};
        versions[top].push_back({kept, in.name()});
      } else {
        current[top] = {written, computes};
        if (!versions.count(top) || versions[top].back().first != written) versions[top].push_back({written, in.name()});
      }
      layer.set_top(j, written);
    }
    *out.add_layer() = layer;
    for (const PendingCast& cast : after) add_cast(cast.from, stored, cast.to, in);
  }
  // The last version of each blob carries the blob's name (in place, a blob's name means its last value).
  std::map<std::string, std::string> rename;
  for (const auto& [blob, list] : versions) {
    if (list.size() < 2 || list.back().first == blob || list.front().first != blob) continue;
    rename[blob] = blob + " (before " + list[1].second + ")";
    rename[list.back().first] = blob;
  }
  if (!rename.empty()) {
    for (LayerParameter& layer : *out.mutable_layer()) {
      for (auto& name : *layer.mutable_bottom())
        if (rename.count(name)) name = rename[name];
      for (auto& name : *layer.mutable_top())
        if (rename.count(name)) name = rename[name];
    }
  }
  return out;
}

}  // namespace cortado
