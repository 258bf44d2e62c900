// net_precision.cpp — the storage types of a net's blobs, and the Cast layers where they change
// (net_rules.hpp, PlanPrecision).
//
// Each layer has a storage type for its tops' data (forward_type) and for their diffs (backward_type):
// its own fields, else the net's defaults (NVIDIA Caffe's names). Three kinds of layers:
//   - layers that keep float whatever the net says: data layers, losses, Softmax, Accuracy, ArgMax
//     and the layers that hand values to the user (their values are labels, probabilities, indices);
//   - layers that only move values (Split, Flatten, Reshape): their tops keep their bottom's types;
//   - all others store their tops in the types asked for.
// A layer computes on the types it supports (ComputesOn): where a layer's computation reads another
// type than its bottom holds, a Cast layer converts the bottom first; where it writes another type than
// its tops are to be stored in, a Cast converts its output. A layer without 16-bit arithmetic of its
// own thus computes in float between two Casts, and its tops are rounded to 16 bits, as a 16-bit
// layer's would be. A blob's last version keeps the blob's name, so tools and scripts find it by name.
#include <map>
#include <set>
#include <vector>

#include "cortado/error.hpp"
#include "cortado/net.hpp"
#include "net_rules.hpp"

namespace cortado {

namespace {

struct Types {
  Type data = FLOAT, diff = FLOAT;
  bool operator==(const Types& o) const { return data == o.data && diff == o.diff; }
  bool operator!=(const Types& o) const { return !(*this == o); }
};

bool IsLoss(const std::string& type) {
  return type.size() > 4 && type.compare(type.size() - 4, 4, "Loss") == 0;
}

bool KeepsFloat(const LayerParameter& layer) {
  static const std::set<std::string> kFloat = {"Softmax", "Accuracy", "ArgMax", "Python", "HDF5Output", "Silence"};
  return layer.bottom_size() == 0 || IsLoss(layer.type()) || kFloat.count(layer.type()) > 0;
}

bool FollowsBottom(const std::string& type) { return type == "Split" || type == "Flatten" || type == "Reshape"; }

// The storage types a layer type's own arithmetic reads and writes besides float.
bool ComputesOn(const std::string& type, Type storage) {
  if (storage == FLOAT) return true;
  return type == "Cast" || type == "Flatten" || type == "Reshape";  // conversions and views of any type
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

const char* Suffix(Type type) { return type == FLOAT ? "float" : type == FLOAT16 ? "fp16" : "bf16"; }

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

NetParameter PlanPrecision(const NetParameter& param, const std::string& source) {
  if (!NetIsMixedPrecision(param)) return param;  // a float net is left as it is
  const Types defaults{StorageType(param.default_forward_type(), source + ": default_forward_type"),
                       StorageType(param.default_backward_type(), source + ": default_backward_type")};
  NetParameter out(param);
  out.clear_layer();
  struct Version {
    std::string name;  // the blob that holds it now
    Types types;
  };
  std::map<std::string, Version> current;                 // blob name in the prototxt -> its latest version
  // Blob name -> its versions, in order: (the blob holding it, the layer that wrote it).
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> versions;
  auto add_cast = [&](const std::string& from, const Types& to, const std::string& to_name, const LayerParameter& near) {
    LayerParameter* cast = out.add_layer();
    cast->set_name(from + " as " + Suffix(to.data) + (near.name().empty() ? "" : " for " + near.name()));
    cast->set_type("Cast");
    cast->add_bottom(from);
    cast->add_top(to_name);
    cast->set_forward_type(to.data);
    cast->set_backward_type(to.diff);
    if (near.has_phase()) cast->set_phase(near.phase());
  };
  for (const LayerParameter& in : param.layer()) {
    const std::string where = source + ": layer " + in.name();
    Types asked = defaults;
    if (in.has_forward_type()) asked.data = StorageType(in.forward_type(), where + ": forward_type");
    if (in.has_backward_type()) asked.diff = StorageType(in.backward_type(), where + ": backward_type");
    if (KeepsFloat(in)) asked = Types{};
    // What the layer computes on, for each bottom, and how its tops are stored.
    std::vector<Types> bottom_types;
    for (const std::string& bottom : in.bottom()) {
      CORTADO_REQUIRE(current.count(bottom), where, " (", in.type(), "): bottom '", bottom,
                      "' is not produced by any earlier layer");
      bottom_types.push_back(current[bottom].types);
    }
    Types stored = asked;
    if (FollowsBottom(in.type()) && !bottom_types.empty()) stored = bottom_types[0];
    const bool native = ComputesOn(in.type(), stored.data) && ComputesOn(in.type(), stored.diff);
    const Types computes = native ? stored : Types{};
    LayerParameter layer(in);
    layer.set_forward_type(computes.data);
    layer.set_backward_type(computes.diff);
    std::vector<std::string> bottom_names;  // what the layer reads, after any Cast
    for (int j = 0; j < in.bottom_size(); ++j) {
      const Version& have = current[in.bottom(j)];
      std::string name = have.name;
      if (have.types != computes) {
        name = in.bottom(j) + " (" + Suffix(computes.data) + " for " + in.name() + ")";
        add_cast(have.name, computes, name, in);
      }
      bottom_names.push_back(name);
      layer.set_bottom(j, name);
    }
    // The layer's tops; Casts after it store them in their types.
    struct PendingCast {
      std::string from, to, blob;
    };
    std::vector<PendingCast> after;
    for (int j = 0; j < in.top_size(); ++j) {
      const std::string& top = in.top(j);
      const bool in_place = j < in.bottom_size() && in.bottom(j) == top;
      std::string written = in_place ? bottom_names[j] : top;
      if (computes != stored) {
        if (!in_place) written = top + " (" + Suffix(computes.data) + " from " + in.name() + ")";
        const std::string kept = versions.count(top) ? top + " (" + Suffix(stored.data) + " after " + in.name() + ")" : top;
        after.push_back({written, kept, top});
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
