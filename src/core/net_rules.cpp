// net_rules.cpp — rewriting a NetParameter before it is built: keeping the layers the net state
// selects, upgrading the legacy net-level `input` fields to an Input layer, and inserting Split layers
// where one top feeds several bottoms.
#include <map>
#include <set>
#include <utility>

#include "cortado/error.hpp"
#include "cortado/net.hpp"
#include "net_rules.hpp"

namespace cortado {

bool Net::StateMeetsRule(const NetState& state, const NetStateRule& rule, const std::string&) {
  if (rule.has_phase() && rule.phase() != state.phase()) return false;
  if (rule.has_min_level() && state.level() < rule.min_level()) return false;
  if (rule.has_max_level() && state.level() > rule.max_level()) return false;
  std::set<std::string> stages(state.stage().begin(), state.stage().end());
  for (const auto& s : rule.stage())
    if (!stages.count(s)) return false;
  for (const auto& s : rule.not_stage())
    if (stages.count(s)) return false;
  return true;
}

NetParameter Net::FilterByState(const NetParameter& param) {
  NetParameter filtered(param);
  filtered.clear_layer();
  for (const LayerParameter& layer : param.layer()) {
    CORTADO_REQUIRE(layer.include_size() == 0 || layer.exclude_size() == 0, "layer ", layer.name(),
                    ": has both include and exclude rules; use one kind");
    bool keep = layer.include_size() == 0;
    for (const auto& rule : layer.exclude())
      if (StateMeetsRule(param.state(), rule, layer.name())) keep = false;
    for (const auto& rule : layer.include())
      if (StateMeetsRule(param.state(), rule, layer.name())) keep = true;
    if (keep) *filtered.add_layer() = layer;
  }
  return filtered;
}

void UpgradeNetInputs(NetParameter* param) {
  if (param->input_size() == 0) return;
  LayerParameter input;
  input.set_name("input");
  input.set_type("Input");
  const bool by_dims = param->input_dim_size() > 0;
  CORTADO_REQUIRE(!by_dims || param->input_dim_size() == 4 * param->input_size(),
                  "net has ", param->input_size(), " inputs but ", param->input_dim_size(),
                  " input_dim values; give 4 per input");
  for (int i = 0; i < param->input_size(); ++i) {
    input.add_top(param->input(i));
    BlobShape* shape = input.mutable_input_param()->add_shape();
    if (by_dims) {
      for (int d = 0; d < 4; ++d) shape->add_dim(param->input_dim(4 * i + d));
    } else {
      CORTADO_REQUIRE(i < param->input_shape_size(), "net input ", param->input(i), " has no input_shape");
      *shape = param->input_shape(i);
    }
  }
  NetParameter upgraded(*param);
  upgraded.clear_input();
  upgraded.clear_input_dim();
  upgraded.clear_input_shape();
  upgraded.clear_layer();
  *upgraded.add_layer() = input;
  for (const auto& layer : param->layer()) *upgraded.add_layer() = layer;
  *param = upgraded;
}

namespace {
std::string SplitLayerName(const std::string& layer, const std::string& blob, int top) {
  return blob + "_" + layer + "_" + std::to_string(top) + "_split";
}
std::string SplitTopName(const std::string& layer, const std::string& blob, int top, int k) {
  return SplitLayerName(layer, blob, top) + "_" + std::to_string(k);
}
}  // namespace

NetParameter InsertSplits(const NetParameter& param, const std::string& source) {
  using TopRef = std::pair<int, int>;  // (layer, top index)
  std::map<std::string, TopRef> last_producer;
  std::map<TopRef, int> consumers;
  std::map<std::pair<int, int>, TopRef> bottom_source;
  std::map<TopRef, float> loss_weight;
  for (int i = 0; i < param.layer_size(); ++i) {
    const LayerParameter& layer = param.layer(i);
    for (int j = 0; j < layer.bottom_size(); ++j) {
      auto it = last_producer.find(layer.bottom(j));
      CORTADO_REQUIRE(it != last_producer.end(), source, ": layer ", layer.name(), " (", layer.type(),
                      "): bottom '", layer.bottom(j), "' is not produced by any earlier layer");
      bottom_source[{i, j}] = it->second;
      ++consumers[it->second];
    }
    for (int j = 0; j < layer.top_size(); ++j) {
      last_producer[layer.top(j)] = {i, j};
      if (j < layer.loss_weight_size()) loss_weight[{i, j}] = layer.loss_weight(j);
    }
  }
  NetParameter out(param);
  out.clear_layer();
  std::map<TopRef, int> next_split_top;
  for (int i = 0; i < param.layer_size(); ++i) {
    LayerParameter* layer = out.add_layer();
    *layer = param.layer(i);
    for (int j = 0; j < layer->bottom_size(); ++j) {
      const TopRef src = bottom_source[{i, j}];
      const float weight = loss_weight.count(src) ? loss_weight[src] : 0.0f;
      if (consumers[src] > 1 || (consumers[src] == 1 && weight != 0.0f)) {
        const LayerParameter& producer = param.layer(src.first);
        layer->set_bottom(j, SplitTopName(producer.name(), layer->bottom(j), src.second,
                                          next_split_top[src]++));
      }
    }
    for (int j = 0; j < layer->top_size(); ++j) {
      const TopRef ref{i, j};
      const float weight = loss_weight.count(ref) ? loss_weight[ref] : 0.0f;
      const int n = consumers[ref];
      if (n > 1 || (n == 1 && weight != 0.0f)) {
        LayerParameter* split = out.add_layer();
        const std::string& blob = layer->top(j);
        split->set_name(SplitLayerName(layer->name(), blob, j));
        split->set_type("Split");
        split->add_bottom(blob);
        const int tops = n + (weight != 0.0f ? 1 : 0);
        for (int k = 0; k < tops; ++k) {
          split->add_top(SplitTopName(layer->name(), blob, j, k));
          if (weight != 0.0f) split->add_loss_weight(k == tops - 1 ? weight : 0.0f);
        }
        if (weight != 0.0f) layer->set_loss_weight(j, 0.0f);
      }
    }
  }
  return out;
}

}  // namespace cortado
