// net.cpp — building a Net (wiring, setup, shared parameters, backward analysis), its memory, and
// running it.
#include "cortado/net.hpp"

#include <glog/logging.h>

#include <cmath>
#include <set>
#include <tuple>

#include "cortado/cpu_engine.hpp"
#include "cortado/error.hpp"
#include "cortado/io.hpp"
#include "cortado/layer_registry.hpp"
#include "cortado/math.hpp"
#include "cortado/upgrade.hpp"
#include "net_rules.hpp"

namespace cortado {

namespace {

// A layer's top storage type (PlanStorage checked the types of a mixed-precision net; a float net
// may name any, all float to Cortado).
DataType StorageOf(Type type) {
  return type == FLOAT16 ? DataType::kFloat16 : type == BFLOAT16 ? DataType::kBFloat16 : DataType::kFloat;
}

}  // namespace

Net::Net(const NetParameter& in_param, Context& ctx, const std::string& source_name)
    : source_(source_name), ctx_(ctx) {
  NetParameter upgraded(in_param);
  if (NetNeedsUpgrade(upgraded)) UpgradeNet(&upgraded, source_);  // V0/V1 layers, input_dim, ...
  UpgradeNetInputs(&upgraded);
  const NetParameter param = PlanStorage(InsertSplits(FilterByState(upgraded), source_), ctx_.device(), source_);
  name_ = param.name();
  phase_ = param.state().phase();
  force_backward_ = param.force_backward();
  runs_backward_ = phase_ == TRAIN || force_backward_;
  memory_reuse_ = param.memory_reuse();
  fuse_ = param.fuse();
  mixed_precision_ = NetIsMixedPrecision(param);
  loss_scaling_.factor = param.global_grad_scale();
  loss_scaling_.adaptive = param.global_grad_scale_adaptive();
  loss_scaling_.dynamic = param.global_grad_scale_dynamic();
  loss_scaling_.growth_interval = static_cast<int>(std::max<uint32_t>(param.global_grad_scale_growth_interval(), 1));
  CORTADO_REQUIRE(std::isfinite(loss_scaling_.factor) && loss_scaling_.factor > 0, source_,
                  ": global_grad_scale must be a positive number, not ", loss_scaling_.factor);
  CORTADO_REQUIRE(!(loss_scaling_.adaptive && loss_scaling_.dynamic), source_,
                  ": choose one of global_grad_scale_adaptive and global_grad_scale_dynamic");
  // Adaptive scaling starts unscaled (it needs a step's gradients); dynamic at the given scale, else 2^16.
  loss_scaling_.initial = loss_scaling_.adaptive ? 1.0f
                          : loss_scaling_.dynamic && !param.has_global_grad_scale() ? 65536.0f
                                                                                    : loss_scaling_.factor;
  loss_scale_ = loss_scaling_.initial;
  if (mixed_precision_ || param.layout() == NHWC) {
    int casts = 0;
    for (const LayerParameter& layer : param.layer()) casts += layer.type() == "Cast";
    LOG(INFO) << source_ << ": " << (mixed_precision_ ? "mixed precision" : "") << (mixed_precision_ && param.layout() == NHWC ? ", " : "")
              << (param.layout() == NHWC ? "NHWC" : "") << ": " << casts
              << " Cast layer(s) convert where a blob's storage type or layout changes; loss scale " << loss_scale_
              << (loss_scaling_.dynamic ? " (dynamic)" : loss_scaling_.adaptive ? " (adaptive)" : "");
  }
  LOG(INFO) << "Initializing net from parameters: " << source_ << " (" << name_ << ", phase "
            << Phase_Name(phase_) << ")";
  if (ctx_.device() == Device::kCPU) WarnIfBlasKernelsAreSlow();  // once per process
  std::map<std::string, int> available;  // blobs produced and not yet consumed
  std::map<std::string, std::string> producer;  // top name -> the layer that first produced it
  for (int layer_id = 0; layer_id < param.layer_size(); ++layer_id) {
    LayerParameter lp = param.layer(layer_id);
    if (!lp.has_phase()) lp.set_phase(phase_);
    if (layer_index_.count(lp.name()))  // Caffe allows it (its mnist_autoencoder has two "loss" layers)
      LOG(WARNING) << source_ << ": two layers are named '" << lp.name() << "'; weights are copied by name, "
                   << "to the later one, as Caffe does";
    CORTADO_REQUIRE(lp.propagate_down_size() == 0 || lp.propagate_down_size() == lp.bottom_size(),
                    source_, ": layer ", lp.name(), ": give propagate_down once per bottom or not at all");
    try {
      layers_.push_back(LayerRegistry::Create(lp, ctx_));
    } catch (const Error& e) {
      throw Error(source_ + ": " + e.what());  // an unknown type: name the prototxt too
    }
    Layer* layer = layers_.back().get();
    CORTADO_REQUIRE(ctx_.device() != Device::kGPU || layer->HasGpuImplementation(), source_, ": ",
                    layer->Describe(), " has no GPU implementation yet; train this net with solver_mode: CPU");
    layer_names_.push_back(lp.name());
    layer_index_[lp.name()] = layer_id;
    LOG(INFO) << "Creating Layer " << lp.name();
    bottom_vecs_.emplace_back();
    top_vecs_.emplace_back();
    bottom_id_vecs_.emplace_back();
    top_id_vecs_.emplace_back();
    bottom_need_backward_.emplace_back();
    for (int j = 0; j < lp.bottom_size(); ++j) AppendBottom(lp, layer_id, j, &available);
    for (int j = 0; j < lp.top_size(); ++j) {
      const std::string& top = lp.top(j);
      const bool asked_in_place = j < lp.bottom_size() && lp.bottom(j) == top;
      auto first = producer.find(top);
      CORTADO_REQUIRE(asked_in_place || first == producer.end(), source_, ": layer ", lp.name(), " (", lp.type(),
                      "): top '", top, "' is already produced by layer ", first->second,
                      "; rename one of the two tops (only in-place reuse, top == bottom, may repeat a name)");
      producer.emplace(top, lp.name());
      const std::string hazard = asked_in_place ? InPlaceHazard(*layer, j) : "";
      if (!hazard.empty()) {
        // The earlier version keeps its memory under a name of its own; later layers read this top.
        const int earlier = bottom_id_vecs_[layer_id][j];
        blob_names_[earlier] = top + " (before " + lp.name() + ")";
        blob_index_[blob_names_[earlier]] = earlier;
        LOG(INFO) << source_ << ": " << layer->Describe() << " runs out of place: in place it would overwrite '"
                  << top << "', which " << hazard;
      }
      AppendTop(lp, layer_id, j, asked_in_place && hazard.empty(), &available);
    }
    // Loss layers create their loss top when the prototxt names none.
    if (layer->AutoTopBlobs()) {
      const int needed = std::max(layer->MinTopBlobs(), layer->ExactNumTopBlobs());
      LayerParameter named(lp);
      for (int j = lp.top_size(); j < needed; ++j) {
        named.add_top(lp.name() + (j == 0 ? "" : "_" + std::to_string(j)));
        AppendTop(named, layer_id, j, false, nullptr);  // anonymous: not a net output
      }
    }
    try {
      layer->SetUp(bottom_vecs_[layer_id], top_vecs_[layer_id]);
    } catch (const Error& e) {
      const std::string what = e.what();
      if (what.rfind("layer ", 0) == 0) throw Error(source_ + ": " + what);
      throw Error(source_ + ": " + layer->Describe() + ": " + what);
    }
    LOG(INFO) << "Setting up " << lp.name();
    for (size_t j = 0; j < top_vecs_[layer_id].size(); ++j) {
      Blob* top = top_vecs_[layer_id][j];
      const int blob_id = top_id_vecs_[layer_id][j];
      blob_loss_weights_[blob_id] = layer->loss(static_cast<int>(j));
      LOG(INFO) << "Top shape: " << top->shape_string();
      if (layer->loss(static_cast<int>(j)) != 0)
        LOG(INFO) << "    with loss weight " << layer->loss(static_cast<int>(j));
      if (layer->TopAliasesBottom(static_cast<int>(j)) < 0 &&
          !(j < bottom_vecs_[layer_id].size() && bottom_vecs_[layer_id][j] == top))
        data_bytes_ += static_cast<size_t>(top->count()) * SizeOf(top->data_type());
    }
    LOG(INFO) << "Memory required for data: " << data_bytes_;
    // The layer's own copy of its parameters: a layer may add ParamSpecs in LayerSetUp (BatchNorm
    // sets lr_mult 0 on its running statistics, as Caffe does).
    AppendParams(layer->layer_param(), layer_id);
    // A layer needs backward if a bottom does or one of its parameters learns.
    bool need = false;
    for (bool b : bottom_need_backward_[layer_id]) need = need || b;
    for (size_t j = 0; j < layer->blobs().size(); ++j)
      need = need || layer->param_propagate_down(static_cast<int>(j));
    layer_need_backward_.push_back(need);
    if (need)
      for (int id : top_id_vecs_[layer_id]) blob_need_backward_[id] = true;
  }
  for (const auto& [blob, id] : available) {
    (void)blob;
    output_blob_indices_.push_back(id);
  }
  std::sort(output_blob_indices_.begin(), output_blob_indices_.end());
  for (int id : output_blob_indices_) {
    output_blobs_.push_back(blobs_[id].get());
    LOG(INFO) << "This network produces output " << blob_names_[id];
  }
  DecideBackward(param);
  FuseChains();
  if (ctx_.device() == Device::kGPU) CheckLabelsAtTheirSource();
  LogChosenEngines();
  LOG(INFO) << "Network initialization done.";
}

void Net::CheckLabelsAtTheirSource() {
  std::vector<std::pair<int, int>> producer(blobs_.size(), {-1, -1});  // blob -> (layer, top); in-place: last writer
  for (size_t i = 0; i < layers_.size(); ++i)
    for (size_t j = 0; j < top_id_vecs_[i].size(); ++j) producer[top_id_vecs_[i][j]] = {static_cast<int>(i), static_cast<int>(j)};
  for (size_t i = 0; i < layers_.size(); ++i) {
    const Layer::LabelRule rule = layers_[i]->label_rule();
    if (rule.bottom < 0 || rule.bottom >= static_cast<int>(bottom_id_vecs_[i].size())) continue;
    auto [source, top] = producer[bottom_id_vecs_[i][rule.bottom]];
    while (source >= 0 && std::string(layers_[source]->type()) == "Split")  // a Split's tops are its bottom
      std::tie(source, top) = producer[bottom_id_vecs_[source][0]];
    if (source < 0 || source >= static_cast<int>(i) || !layers_[source]->CanCheckLabels()) continue;
    layers_[source]->AddLabelCheck(top, layers_[i].get());
    layers_[i]->set_labels_checked_upstream(true);
  }
}

Net::~Net() = default;

std::string Net::InPlaceHazard(const Layer& layer, int top_id) const {
  const int layer_id = static_cast<int>(layers_.size()) - 1;  // the layer being added
  const auto [writer, writer_top] = last_writer_[bottom_id_vecs_[layer_id][top_id]];
  if (writer >= 0) {
    const Layer& earlier = *layers_[writer];
    if (earlier.TopMayViewBottomData(writer_top))
      return earlier.Describe() + " shares with the other consumers of its input";
    // An in-place layer's backward that reads its "bottom" reads this same buffer (ReLU tests y > 0).
    const bool earlier_in_place = writer_top < static_cast<int>(bottom_id_vecs_[writer].size()) &&
                                  bottom_id_vecs_[writer][writer_top] == top_id_vecs_[writer][writer_top];
    const bool earlier_backward = runs_backward_ && (layer_need_backward_[writer] || force_backward_);
    if (earlier_backward && (earlier.BackwardReadsTopData(writer_top) ||
                             (earlier_in_place && earlier.BackwardReadsBottomData(writer_top))))
      return "the backward of " + earlier.Describe() + " reads";
  }
  if (runs_backward_ && !layer.InPlaceSafe()) return "its own backward may read (it keeps no copy of its input)";
  return "";
}

void Net::AppendTop(const LayerParameter& lp, int layer_id, int top_id, bool in_place,
                    std::map<std::string, int>* available) {
  const std::string& name = lp.top(top_id);
  int blob_id;
  if (in_place) {
    LOG(INFO) << lp.name() << " -> " << name << " (in-place)";
    blob_id = bottom_id_vecs_[layer_id][top_id];
  } else {
    LOG(INFO) << lp.name() << " -> " << name;
    blob_id = static_cast<int>(blobs_.size());
    blobs_.push_back(std::make_unique<Blob>());
    blobs_.back()->set_types(StorageOf(lp.forward_type()), StorageOf(lp.backward_type()));
    blobs_.back()->set_layout(lp.layout() == NHWC ? MemoryLayout::kNHWC : MemoryLayout::kNCHW);
    blob_names_.push_back(name);
    blob_need_backward_.push_back(false);
    blob_loss_weights_.push_back(0.0f);
    last_writer_.emplace_back(-1, -1);
    blob_index_[name] = blob_id;
  }
  last_writer_[blob_id] = {layer_id, top_id};
  top_id_vecs_[layer_id].push_back(blob_id);
  top_vecs_[layer_id].push_back(blobs_[blob_id].get());
  if (available) (*available)[name] = blob_id;
}

void Net::AppendBottom(const LayerParameter& lp, int layer_id, int bottom_id,
                       std::map<std::string, int>* available) {
  const std::string& name = lp.bottom(bottom_id);
  auto it = available->find(name);
  CORTADO_REQUIRE(it != available->end(), source_, ": layer ", lp.name(), " (", lp.type(), "): bottom '",
                  name, "' is not produced by any earlier layer");
  const int blob_id = it->second;
  LOG(INFO) << lp.name() << " <- " << name;
  bottom_vecs_[layer_id].push_back(blobs_[blob_id].get());
  bottom_id_vecs_[layer_id].push_back(blob_id);
  const bool propagate = lp.propagate_down_size() == 0 || lp.propagate_down(bottom_id);
  bottom_need_backward_[layer_id].push_back(blob_need_backward_[blob_id] && propagate);
  available->erase(it);
}

void Net::AppendParams(const LayerParameter& lp, int layer_id) {
  Layer* layer = layers_[layer_id].get();
  const int n = static_cast<int>(layer->blobs().size());
  CORTADO_REQUIRE(lp.param_size() <= n, source_, ": ", layer->Describe(), ": has ", lp.param_size(),
                  " param entries but only ", n, " learnable blobs");
  for (int j = 0; j < n; ++j) {
    const ParamSpec spec = j < lp.param_size() ? lp.param(j) : ParamSpec();
    const int param_id = static_cast<int>(params_.size());
    Blob* blob = layer->blobs()[j].get();
    params_.push_back(blob);
    param_layer_indices_.push_back({layer_id, j});
    layer->set_param_propagate_down(j, spec.lr_mult() != 0.0f);
    const std::string& shared_name = spec.name();
    auto owner = shared_name.empty() ? param_names_index_.end() : param_names_index_.find(shared_name);
    if (owner == param_names_index_.end()) {
      if (!shared_name.empty()) param_names_index_[shared_name] = param_id;
      param_owners_.push_back(-1);
      learnable_param_ids_.push_back(static_cast<int>(learnable_params_.size()));
      learnable_params_.push_back(blob);
      params_lr_.push_back(spec.lr_mult());
      params_weight_decay_.push_back(spec.decay_mult());
      continue;
    }
    // A shared parameter: same element count always; same shape unless PERMISSIVE.
    const int owner_id = owner->second;
    Blob* owner_blob = params_[owner_id];
    const auto [owner_layer, owner_index] = param_layer_indices_[owner_id];
    if (spec.share_mode() == ParamSpec::PERMISSIVE) {
      CORTADO_REQUIRE(owner_blob->count() == blob->count(), source_, ": shared parameter '", shared_name,
                      "': layer ", lp.name(), " blob ", j, " has ", blob->count(), " elements but layer ",
                      layer_names_[owner_layer], " blob ", owner_index, " has ", owner_blob->count());
    } else {
      CORTADO_REQUIRE(owner_blob->shape() == blob->shape(), source_, ": shared parameter '", shared_name,
                      "': layer ", lp.name(), " blob ", j, " has shape ", blob->shape_string(),
                      " but layer ", layer_names_[owner_layer], " blob ", owner_index, " has ",
                      owner_blob->shape_string(), " (use share_mode: PERMISSIVE to share by count)");
    }
    param_owners_.push_back(owner_id);
    learnable_param_ids_.push_back(learnable_param_ids_[owner_id]);
    const int learnable_id = learnable_param_ids_[owner_id];
    if (spec.has_lr_mult()) {
      float& lr = params_lr_[learnable_id];
      CORTADO_REQUIRE(lr == spec.lr_mult(), source_, ": shared parameter '", shared_name,
                      "' has different lr_mult values");
    }
    if (spec.has_decay_mult()) {
      CORTADO_REQUIRE(params_weight_decay_[learnable_id] == spec.decay_mult(), source_,
                      ": shared parameter '", shared_name, "' has different decay_mult values");
    }
  }
}

void Net::DecideBackward(const NetParameter& param) {
  const int num_layers = static_cast<int>(layers_.size());
  // Backward sweep: drop layers that do not reach a loss, and bottoms nobody differentiates.
  std::set<int> blobs_under_loss, blobs_skip_backward;
  for (int i = num_layers - 1; i >= 0; --i) {
    bool contributes = false, skip_propagate = true;
    for (size_t j = 0; j < top_id_vecs_[i].size(); ++j) {
      const int id = top_id_vecs_[i][j];
      if (layers_[i]->loss(static_cast<int>(j)) != 0 || blobs_under_loss.count(id)) contributes = true;
      if (!blobs_skip_backward.count(id)) skip_propagate = false;
      if (contributes && !skip_propagate) break;
    }
    if (layer_need_backward_[i] && skip_propagate) {
      layer_need_backward_[i] = false;
      for (size_t j = 0; j < bottom_id_vecs_[i].size(); ++j) bottom_need_backward_[i][j] = false;
    }
    if (!contributes) layer_need_backward_[i] = false;
    if (layer_need_backward_[i])
      LOG(INFO) << layer_names_[i] << " needs backward computation.";
    else
      LOG(INFO) << layer_names_[i] << " does not need backward computation.";
    for (size_t j = 0; j < bottom_id_vecs_[i].size(); ++j) {
      if (contributes) {
        blobs_under_loss.insert(bottom_id_vecs_[i][j]);
      } else {
        bottom_need_backward_[i][j] = false;
      }
      if (!bottom_need_backward_[i][j]) blobs_skip_backward.insert(bottom_id_vecs_[i][j]);
    }
  }
  if (param.force_backward()) {
    for (int i = 0; i < num_layers; ++i) {
      layer_need_backward_[i] = true;
      for (size_t j = 0; j < bottom_id_vecs_[i].size(); ++j) {
        bottom_need_backward_[i][j] = bottom_need_backward_[i][j] ||
                                      layers_[i]->AllowForceBackward(static_cast<int>(j));
      }
    }
  }
}

Blob* Net::blob_by_name(const std::string& name) const {
  auto it = blob_index_.find(name);
  CORTADO_REQUIRE(it != blob_index_.end(), "net ", name_, " has no blob named '", name, "'");
  return blobs_[it->second].get();
}

Layer* Net::layer_by_name(const std::string& name) const {
  auto it = layer_index_.find(name);
  CORTADO_REQUIRE(it != layer_index_.end(), "net ", name_, " has no layer named '", name, "'");
  return layers_[it->second].get();
}

// One line per layer type whose layers chose engines when shaped, e.g.
// "Convolution engines: onednn 50, im2col 3".
void Net::LogChosenEngines() const {
  std::map<std::string, std::map<std::string, int>> counts;  // type → engine → layers
  for (const auto& layer : layers_)
    if (const char* engine = layer->chosen_engine()) ++counts[layer->type()][engine];
  for (const auto& [type, engines] : counts) {
    std::string line;
    for (const auto& [engine, n] : engines) line += (line.empty() ? "" : ", ") + engine + " " + std::to_string(n);
    LOG(INFO) << type << " engines: " << line;
  }
}

}  // namespace cortado
