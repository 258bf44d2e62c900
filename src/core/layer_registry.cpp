// layer_registry.cpp — the table of layer types and the "unknown layer type" message (with the
// closest known type, from suggest.hpp).
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

std::unique_ptr<Layer> LayerRegistry::Create(const LayerParameter& param, Context& ctx) {
  auto it = Table().find(param.type());
  if (it != Table().end()) return it->second(param, ctx);
  std::string known;
  for (const auto& entry : Table()) known += (known.empty() ? "" : ", ") + entry.first;
  const std::string closest = ClosestMatch(param.type(), Types());
  Fail("layer ", param.name(), ": unknown layer type ", param.type(), " (known types: ", known, ")",
       closest.empty() ? "" : "; did you mean " + closest + "?");
}

}  // namespace cortado
