// layer_registry.cpp — the table of layer types and the "unknown layer type" message.
#include "cortado/layer_registry.hpp"

#include <algorithm>
#include <map>

#include "cortado/error.hpp"

namespace cortado {

namespace {
std::map<std::string, LayerCreator>& Table() {
  static std::map<std::string, LayerCreator> table;
  return table;
}

// Edit distance, case-insensitive, to suggest the closest known type.
size_t Distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      const bool same = std::tolower(a[i - 1]) == std::tolower(b[j - 1]);
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
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

std::unique_ptr<Layer> LayerRegistry::Create(const LayerParameter& param, Context& ctx) {
  auto it = Table().find(param.type());
  if (it != Table().end()) return it->second(param, ctx);
  std::string known, closest;
  size_t best = SIZE_MAX;
  for (const auto& entry : Table()) {
    known += (known.empty() ? "" : ", ") + entry.first;
    const size_t d = Distance(param.type(), entry.first);
    if (d < best) best = d, closest = entry.first;
  }
  Fail("layer ", param.name(), ": unknown layer type ", param.type(), " (known types: ", known, ")",
       closest.empty() ? "" : "; did you mean " + closest + "?");
}

}  // namespace cortado
