// net_memory.cpp — a Net's memory plan: which buffers a pass uses and when, which of them may share
// memory, and binding them before the net is initialised.
//
// One pass is the forward of layers 0..L-1 (steps 0..L-1), then, in nets that run backward, the
// backward of layers L-1..0 (steps L..2L-1). From what each layer's Forward and Backward read and
// write (Layer::BackwardReadsBottomData and friends), every data and diff buffer gets the first and
// last step that uses it; buffers whose steps do not overlap share memory (PackByLifetime). What must
// outlive a pass keeps memory of its own: the data layers' tops (the prefetch hand-off writes there),
// the net's outputs and loss weights, blobs named in KeepReadable, layer buffers that keep state
// between passes, and diffs that are read but never written (they must stay zero).
#include <glog/logging.h>

#include <algorithm>
#include <climits>
#include <functional>
#include <numeric>

#include "cortado/error.hpp"
#include "cortado/net.hpp"

namespace cortado {

namespace {

// Union-find over blob ids: a view (Flatten's top, a Split top) uses its source's buffer.
class Roots {
 public:
  explicit Roots(size_t n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), 0); }
  int Find(int i) {
    while (parent_[i] != i) i = parent_[i] = parent_[parent_[i]];
    return i;
  }
  void Join(int view, int source) { parent_[Find(view)] = Find(source); }

 private:
  std::vector<int> parent_;
};

// One buffer of the plan: its size, the steps that use it, and whether it keeps memory of its own.
struct Buffer {
  size_t floats = 0;
  MemoryUse use = MemoryUse::kActivations;
  int first = INT_MAX;
  int last = -1;
  bool per_call = false;  // a layer's buffer used only inside its Forward and its Backward: two spans
  bool pinned = false;
  bool read = false, written = false;  // diffs: by some backward
  std::function<void(float*)> bind;
  void UseAt(int step) {
    first = std::min(first, step);
    last = std::max(last, step);
  }
  void UseOver(std::pair<int, int> steps) {
    UseAt(steps.first);
    UseAt(steps.second);
  }
};

}  // namespace

// A linear search, not a set of pointers: what runs must not depend on where blobs are in memory
// (the fuzzing leg's coverage is compared from run to run).
bool Net::FromOtherNet(const Blob* param) const {
  return std::find(params_shared_from_other_.begin(), params_shared_from_other_.end(), param) !=
         params_shared_from_other_.end();
}

void Net::KeepReadable(const std::vector<std::string>& blob_names) {
  CHECK(!initialized_) << "KeepReadable after Initialize";
  for (const std::string& name : blob_names) {
    CORTADO_REQUIRE(has_blob(name), source_, ": there is no blob named '", name, "' to read");
    const int id = blob_index_.at(name);
    keep_readable_.insert(id);
    for (size_t c = 0; c < chains_.size(); ++c)  // a fused backward pass leaves its diff unwritten
      if (std::find(chains_[c].inner_blobs.begin(), chains_[c].inner_blobs.end(), id) != chains_[c].inner_blobs.end())
        Unfuse(static_cast<int>(c));
  }
}

void Net::RequestMemory(MemoryPlan& plan, MemorySharing sharing) {
  const int num_layers = static_cast<int>(layers_.size());
  const int num_blobs = static_cast<int>(blobs_.size());
  auto backward_step = [num_layers](int i) { return 2 * num_layers - 1 - i; };
  auto runs_backward = [this](int i) { return runs_backward_ && layer_need_backward_[i]; };

  // Which blobs are views of another's data (and diff).
  Roots data_root(num_blobs), diff_root(num_blobs);
  for (int i = 0; i < num_layers; ++i) {
    for (size_t j = 0; j < top_id_vecs_[i].size(); ++j) {
      const int top = top_id_vecs_[i][j];
      const int alias = layers_[i]->TopAliasesBottom(static_cast<int>(j));
      if (alias >= 0) {
        data_root.Join(top, bottom_id_vecs_[i][alias]);
        diff_root.Join(top, bottom_id_vecs_[i][alias]);
      } else if (layers_[i]->TopMayViewBottomData(static_cast<int>(j)) && top != bottom_id_vecs_[i][0]) {
        data_root.Join(top, bottom_id_vecs_[i][0]);
      }
    }
  }

  // One buffer per root's data, per root's diff (where diffs exist), and per layer buffer.
  std::vector<Buffer> buffers;
  std::vector<int> data_buffer(num_blobs, -1), diff_buffer(num_blobs, -1);
  auto add = [&buffers](size_t floats, MemoryUse use, std::function<void(float*)> bind) {
    buffers.push_back({});
    buffers.back().floats = floats;
    buffers.back().use = use;
    buffers.back().bind = std::move(bind);
    return static_cast<int>(buffers.size()) - 1;
  };
  std::vector<bool> has_diff(num_blobs, runs_backward_);
  for (int i = 0; i < num_layers; ++i)
    for (size_t j = 0; j < top_id_vecs_[i].size(); ++j)
      if (layers_[i]->loss(static_cast<int>(j)) != 0) has_diff[diff_root.Find(top_id_vecs_[i][j])] = true;
  planned_addresses_.clear();
  auto bind_data = [this](Blob* blob) {
    planned_addresses_.push_back({blob});
    return [this, k = planned_addresses_.size() - 1](float* p) { planned_addresses_[k].data = p; };
  };
  auto bind_diff = [this](Blob* blob) {
    if (planned_addresses_.empty() || planned_addresses_.back().blob != blob) planned_addresses_.push_back({blob});
    return [this, k = planned_addresses_.size() - 1](float* p) { planned_addresses_[k].diff = p; };
  };
  for (int b = 0; b < num_blobs; ++b) {
    Blob* blob = blobs_[b].get();
    if (data_root.Find(b) == b)
      data_buffer[b] = add(static_cast<size_t>(blob->data_floats()), MemoryUse::kActivations, bind_data(blob));
    if (diff_root.Find(b) == b && has_diff[b])
      diff_buffer[b] = add(static_cast<size_t>(blob->diff_floats()), MemoryUse::kGradients, bind_diff(blob));
  }
  auto data_of = [&](int blob) -> Buffer& { return buffers[data_buffer[data_root.Find(blob)]]; };
  auto diff_of = [&](int blob) -> Buffer* {
    const int k = diff_buffer[diff_root.Find(blob)];
    return k < 0 ? nullptr : &buffers[k];
  };
  auto pin = [&](int blob) {
    data_of(blob).pinned = true;
    if (Buffer* diff = diff_of(blob)) diff->pinned = true;
  };

  // When each is used. A blob that a fused chain's layer uses is used over the whole chain's steps, as
  // the fused layer may write it at another of them (net_fusion.cpp).
  std::vector<Blob*> workspaces;
  for (int i = 0; i < num_layers; ++i) {
    Layer& layer = *layers_[i];
    const std::vector<int>& bottoms = bottom_id_vecs_[i];
    const std::vector<int>& tops = top_id_vecs_[i];
    const std::pair<int, int> forward = FusedSpan(i);  // the steps of layer i's chain (i's alone, unfused)
    const std::pair<int, int> backward{backward_step(forward.second), backward_step(forward.first)};
    for (int b : bottoms) data_of(b).UseOver(forward);
    for (size_t j = 0; j < tops.size(); ++j) {
      data_of(tops[j]).UseOver(forward);
      if (layer.loss(static_cast<int>(j)) != 0) pin(tops[j]);  // its diff holds the loss weight
      if (bottoms.empty()) pin(tops[j]);                        // a data layer's top
    }
    if (runs_backward(i)) {
      for (size_t j = 0; j < bottoms.size(); ++j) {
        if (layer.BackwardReadsBottomData(static_cast<int>(j))) data_of(bottoms[j]).UseOver(backward);
        Buffer* diff = diff_of(bottoms[j]);
        if (diff != nullptr && bottom_need_backward_[i][j]) {
          diff->UseOver(backward);
          diff->written = true;
        }
      }
      for (size_t j = 0; j < tops.size(); ++j) {
        if (layer.BackwardReadsTopData(static_cast<int>(j))) data_of(tops[j]).UseOver(backward);
        if (Buffer* diff = diff_of(tops[j])) {
          diff->UseOver(backward);
          diff->read = true;
        }
      }
    }
    for (const Layer::Scratch& scratch : layer.scratch_buffers()) {
      if (scratch.workspace) {
        workspaces.push_back(scratch.blob);
        continue;
      }
      Blob* blob = scratch.blob;
      std::vector<int> own{add(static_cast<size_t>(blob->data_floats()), MemoryUse::kLayerBuffers, bind_data(blob))};
      if (scratch.with_diff)
        own.push_back(add(static_cast<size_t>(blob->diff_floats()), MemoryUse::kLayerBuffers, bind_diff(blob)));
      for (int k : own) {
        if (scratch.life == Layer::ScratchLife::kAcrossSteps) {
          buffers[k].pinned = true;
          continue;
        }
        buffers[k].per_call = scratch.life == Layer::ScratchLife::kWithinCall;
        buffers[k].UseAt(i);
        if (runs_backward(i)) buffers[k].UseAt(backward_step(i));
      }
    }
  }
  for (int id : output_blob_indices_) data_of(id).pinned = true;
  for (int id : keep_readable_) pin(id);
  for (Buffer& b : buffers)
    if (b.read && !b.written) b.pinned = true;  // nobody writes it: it must keep reading zero

  // Pack what may share; the rest gets memory of its own.
  const Device device = plan.device();
  std::vector<int> pooled;
  for (size_t k = 0; k < buffers.size(); ++k) {
    if (memory_reuse_ && !buffers[k].pinned) {
      pooled.push_back(static_cast<int>(k));
    } else {
      plan.Request(buffers[k].floats, std::move(buffers[k].bind), buffers[k].use);
    }
  }
  if (!pooled.empty()) {
    std::vector<Lifetime> lives;
    for (int k : pooled) {
      const Buffer& b = buffers[k];
      Lifetime life{b.floats, {}};
      if (b.per_call) {
        life.spans = {{b.first, b.first}, {b.last, b.last}};
      } else if (b.first <= b.last) {
        life.spans = {{b.first, b.last}};
      }
      lives.push_back(life);
      plan.CountReused(buffers[k].use, buffers[k].floats);
    }
    size_t pool_floats = 0;
    const std::vector<size_t> offsets = PackByLifetime(lives, &pool_floats);
    std::vector<std::function<void(float*)>> binds;
    for (int k : pooled) binds.push_back(std::move(buffers[k].bind));
    const int region = sharing.pool >= 0 ? sharing.pool : plan.AddSharedRegion();
    plan.RequestShared(region, pool_floats, [binds, offsets](float* base) {
      for (size_t k = 0; k < binds.size(); ++k) binds[k](base + offsets[k]);
    });
  }

  // Workspaces: one region for all, as large as the largest (layers run one at a time, in order).
  int64_t workspace_floats = 0;
  for (const Blob* w : workspaces) workspace_floats = std::max(workspace_floats, w->count());
  if (!workspaces.empty()) {
    auto bind = [workspaces, workspace_floats, device](float* region) {
      for (Blob* w : workspaces) w->Bind(device, region, nullptr, workspace_floats);
    };
    if (memory_reuse_ && sharing.workspace >= 0) {
      plan.RequestShared(sharing.workspace, workspace_floats, bind);
      plan.CountReused(MemoryUse::kWorkspace, workspace_floats);
    } else {
      plan.Request(workspace_floats, bind, MemoryUse::kWorkspace);
    }
    LOG(INFO) << "Workspace shared by " << workspaces.size() << " buffer(s): " << workspace_floats * sizeof(float)
              << " bytes";
  }

  // Parameters: owners laid end to end in one data and one gradient buffer, unless they come from
  // another net.
  std::vector<int64_t> offsets;
  param_count_ = 0;
  for (Blob* p : learnable_params_) {
    const bool external = FromOtherNet(p);
    offsets.push_back(external ? -1 : param_count_);
    if (!external) param_count_ += p->count();
  }
  if (device == Device::kGPU) plan.Request(1, [this](float* loss) { loss_device_ = loss; });
  plan.Request(param_count_, [this](float* data) { param_data_ = data; }, MemoryUse::kParameters);
  plan.Request(param_count_, [this, offsets, device](float* diff) {
    param_diff_ = diff;
    for (size_t k = 0; k < learnable_params_.size(); ++k) {
      if (offsets[k] < 0) continue;
      Blob* p = learnable_params_[k];
      p->Bind(device, param_data_ + offsets[k], param_diff_ + offsets[k], p->count());
    }
  }, MemoryUse::kParameters);
}

void Net::Initialize() {
  CHECK(!initialized_);
  for (const PlannedAddresses& planned : planned_addresses_)
    planned.blob->Bind(ctx_.device(), planned.data, planned.diff, planned.blob->count());
  planned_addresses_.clear();
  // Parameters from another net, and parameters shared inside this net, point at their owners.
  for (size_t k = 0; k < params_shared_from_other_.size(); ++k) {
    Blob* mine = params_shared_from_other_[k];
    mine->ShareData(*params_other_source_[k]);
    mine->ShareDiff(*params_other_source_[k]);
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    if (param_owners_[i] < 0) continue;
    params_[i]->ShareData(*params_[param_owners_[i]]);
    params_[i]->ShareDiff(*params_[param_owners_[i]]);
  }
  // Views read their bottom's memory: Flatten's and Reshape's data and diff, a Split's data.
  for (size_t i = 0; i < layers_.size(); ++i) {
    for (size_t j = 0; j < top_vecs_[i].size(); ++j) {
      Blob* top = top_vecs_[i][j];
      const int alias = layers_[i]->TopAliasesBottom(static_cast<int>(j));
      if (alias >= 0) {
        top->ShareData(*bottom_vecs_[i][alias]);
        top->ShareDiff(*bottom_vecs_[i][alias]);
      } else if (layers_[i]->TopMayViewBottomData(static_cast<int>(j)) && top != bottom_vecs_[i][0]) {
        top->ShareData(*bottom_vecs_[i][0]);
      }
    }
  }
  // Layers that time their engines on the bound buffers (Layer::OnMemoryBound) do it before anything
  // that matters is written: the loss weights, the parameters, the cleared gradients.
  for (size_t i = 0; i < layers_.size(); ++i) {
    Layer::BoundPasses passes;
    passes.backward = runs_backward_ && layer_need_backward_[i];
    passes.propagate_down.assign(bottom_vecs_[i].size(), false);
    if (passes.backward) passes.propagate_down = bottom_need_backward_[i];
    passes.param_diffs = passes.backward;  // another net's gradients must keep their values
    for (const auto& p : layers_[i]->blobs())
      if (FromOtherNet(p.get())) passes.param_diffs = false;
    layers_[i]->OnMemoryBound(bottom_vecs_[i], top_vecs_[i], passes);
  }
  WriteLossDiffs();
  // Fillers run for layers that own their parameters: not for those reading another layer's or
  // another net's (filling them would overwrite the owner's values).
  std::vector<bool> owns_all(layers_.size());
  for (size_t i = 0; i < layers_.size(); ++i) owns_all[i] = !layers_[i]->blobs().empty();
  for (size_t i = 0; i < params_.size(); ++i)
    if (param_owners_[i] >= 0 || FromOtherNet(params_[i])) owns_all[param_layer_indices_[i].first] = false;
  for (size_t i = 0; i < layers_.size(); ++i)
    if (owns_all[i]) layers_[i]->InitParams();
  if (param_count_ > 0) SetValues(param_count_, 0.0f, param_diff_);
  initialized_ = true;
}

// The backward pass starts from loss weight × loss scale in each loss top's diff.
void Net::WriteLossDiffs() {
  for (const LossTop& top : loss_tops()) SetValues(top.count, top.weight * loss_scale_, top.diff);
}

std::vector<Net::LossTop> Net::loss_tops() const {
  std::vector<LossTop> tops;
  for (size_t i = 0; i < layers_.size(); ++i)
    for (size_t j = 0; j < top_vecs_[i].size(); ++j) {
      const float weight = layers_[i]->loss(static_cast<int>(j));
      if (weight != 0) tops.push_back({top_vecs_[i][j]->diff(), top_vecs_[i][j]->count(), weight});
    }
  return tops;
}

void Net::SetLossScale(float scale) {
  CHECK(initialized_);
  if (scale == loss_scale_) return;
  loss_scale_ = scale;
  WriteLossDiffs();
}

void Net::AllocateOwnArena() {
  MemoryPlan plan(ctx_.device());
  RequestMemory(plan);
  LOG(INFO) << plan.Summary();
  own_arena_ = plan.Allocate();
  Initialize();
}

}  // namespace cortado
