// net_run.cpp — a Net's memory (plan, bind, initialise), forward and backward passes, and weights
// in and out.
#include <glog/logging.h>

#include <algorithm>
#include <set>

#include "cortado/error.hpp"
#include "cortado/gpu.hpp"
#include "cortado/hdf5.hpp"
#include "cortado/io.hpp"
#include "cortado/math.hpp"
#include "cortado/math_gpu.hpp"
#include "cortado/net.hpp"
#include "cortado/step_inputs.hpp"
#include "cortado/upgrade.hpp"

namespace cortado {

void Net::ShareTrainedLayersWith(const Net* other) {
  CHECK(!initialized_) << "ShareTrainedLayersWith after Initialize";
  for (size_t i = 0; i < layers_.size(); ++i) {
    if (!other->has_layer(layer_names_[i])) continue;
    Layer* source = other->layer_by_name(layer_names_[i]);
    auto& mine = layers_[i]->blobs();
    CORTADO_REQUIRE(mine.size() == source->blobs().size(), "layer ", layer_names_[i],
                    ": has ", mine.size(), " learnable blobs in one net and ", source->blobs().size(),
                    " in the other");
    for (size_t j = 0; j < mine.size(); ++j) {
      CORTADO_REQUIRE(mine[j]->shape() == source->blobs()[j]->shape(), "layer ", layer_names_[i],
                      " blob ", j, ": shape ", mine[j]->shape_string(), " in one net but ",
                      source->blobs()[j]->shape_string(), " in the other");
      params_shared_from_other_.push_back(mine[j].get());
      params_other_source_.push_back(source->blobs()[j].get());
    }
  }
}

void Net::RequestMemory(MemoryPlan& plan) {
  // Activations: data always; diffs in nets that run backward, and on loss tops (they hold weights).
  const bool backward = phase_ == TRAIN;
  std::vector<bool> requested(blobs_.size(), false);
  std::vector<Blob*> workspaces;
  for (size_t i = 0; i < layers_.size(); ++i) {
    for (size_t j = 0; j < top_vecs_[i].size(); ++j) {
      const int id = top_id_vecs_[i][j];
      if (requested[id] || layers_[i]->TopAliasesBottom(static_cast<int>(j)) >= 0) continue;
      requested[id] = true;
      plan.RequestBlob(blobs_[id].get(), backward || layers_[i]->loss(static_cast<int>(j)) != 0);
    }
    for (const auto& scratch : layers_[i]->scratch_buffers()) {
      if (scratch.workspace) {
        workspaces.push_back(scratch.blob);
      } else {
        plan.RequestBlob(scratch.blob, scratch.with_diff);
      }
    }
  }
  // Workspaces: one region for all, as large as the largest (layers run one at a time, in order).
  int64_t workspace_floats = 0;
  for (const Blob* w : workspaces) workspace_floats = std::max(workspace_floats, w->count());
  if (!workspaces.empty()) {
    const Device device = plan.device();
    plan.Request(workspace_floats, [workspaces, workspace_floats, device](float* region) {
      for (Blob* w : workspaces) w->Bind(device, region, nullptr, workspace_floats);
    });
    LOG(INFO) << "Workspace shared by " << workspaces.size() << " buffer(s): " << workspace_floats * sizeof(float)
              << " bytes";
  }
  // Parameters: owners laid end to end in one data and one gradient buffer, unless they come from
  // another net.
  std::set<const Blob*> external(params_shared_from_other_.begin(), params_shared_from_other_.end());
  std::vector<int64_t> offsets;
  param_count_ = 0;
  for (Blob* p : learnable_params_) {
    offsets.push_back(external.count(p) ? -1 : param_count_);
    if (!external.count(p)) param_count_ += p->count();
  }
  if (plan.device() == Device::kGPU) plan.Request(1, [this](float* loss) { loss_device_ = loss; });
  plan.Request(param_count_, [this](float* data) { param_data_ = data; });
  const Device device = plan.device();
  plan.Request(param_count_, [this, offsets, device](float* diff) {
    param_diff_ = diff;
    for (size_t k = 0; k < learnable_params_.size(); ++k) {
      if (offsets[k] < 0) continue;
      Blob* p = learnable_params_[k];
      p->Bind(device, param_data_ + offsets[k], param_diff_ + offsets[k], p->count());
    }
  });
}

void Net::Initialize() {
  CHECK(!initialized_);
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
  // Views (Flatten, Reshape) read their bottom's memory.
  for (size_t i = 0; i < layers_.size(); ++i) {
    for (size_t j = 0; j < top_vecs_[i].size(); ++j) {
      const int alias = layers_[i]->TopAliasesBottom(static_cast<int>(j));
      if (alias < 0) continue;
      top_vecs_[i][j]->ShareData(*bottom_vecs_[i][alias]);
      top_vecs_[i][j]->ShareDiff(*bottom_vecs_[i][alias]);
    }
  }
  for (size_t i = 0; i < layers_.size(); ++i)
    for (size_t j = 0; j < top_vecs_[i].size(); ++j) {
      const float weight = layers_[i]->loss(static_cast<int>(j));
      if (weight != 0) SetValues(top_vecs_[i][j]->count(), weight, top_vecs_[i][j]->diff());
    }
  // Fillers run for layers that own their parameters: not for those reading another layer's or
  // another net's (filling them would overwrite the owner's values).
  std::set<const Blob*> borrowed(params_shared_from_other_.begin(), params_shared_from_other_.end());
  for (size_t i = 0; i < params_.size(); ++i)
    if (param_owners_[i] >= 0) borrowed.insert(params_[i]);
  for (auto& layer : layers_) {
    bool owns_all = !layer->blobs().empty();
    for (auto& b : layer->blobs()) owns_all = owns_all && !borrowed.count(b.get());
    if (owns_all) layer->InitParams();
  }
  if (param_count_ > 0) SetValues(param_count_, 0.0f, param_diff_);
  initialized_ = true;
}

void Net::AllocateOwnArena() {
  MemoryPlan plan(ctx_.device());
  RequestMemory(plan);
  own_arena_ = plan.Allocate();
  Initialize();
}

float Net::ForwardFromTo(int start, int end) {
  CHECK(initialized_) << "Net::Forward before Initialize";
  if (ctx_.device() == Device::kGPU) {
    if (start == 0) {
      PrepareStep();
      StepInputsOf(ctx_).Upload(ctx_);
    }
    gpu_set(ctx_, 1, 0.0f, loss_device_);
    ForwardOnDevice(start, end);
    float loss = 0;
    GpuCopy(&loss, loss_device_, sizeof loss);  // waits for the forward pass
    return loss;
  }
  float loss = 0;
  try {
    for (int i = start; i <= end; ++i) {
      FollowShapeChanges(i);
      loss += layers_[i]->Forward(bottom_vecs_[i], top_vecs_[i]);
    }
  } catch (const Error& e) {
    throw Error(source_ + ": " + e.what());  // a bad label or record: name the prototxt as setup does
  }
  return loss;
}

void Net::FollowShapeChanges(int i) {
  if (i == 0) shapes_changed_ = false;
  if (shapes_changed_) layers_[i]->Reshape(bottom_vecs_[i], top_vecs_[i]);  // within the capacity set up
  if (layers_[i]->ReshapesTopsInForward()) shapes_changed_ = true;
}

void Net::PrepareStep() {
  for (auto& layer : layers_) layer->PrepareStep();
}

void Net::ForwardOnDevice(int start, int end) {
  CHECK(initialized_ && ctx_.device() == Device::kGPU) << "Net::ForwardOnDevice needs an initialised GPU net";
  try {
    for (int i = start; i <= end; ++i) {
      FollowShapeChanges(i);
      layers_[i]->ForwardOnDevice(bottom_vecs_[i], top_vecs_[i], loss_device_);
    }
  } catch (const Error& e) {
    throw Error(source_ + ": " + e.what());  // a bad label or record: name the prototxt as setup does
  }
}

float Net::Forward() { return ForwardFromTo(0, static_cast<int>(layers_.size()) - 1); }

void Net::Backward() {
  CHECK(phase_ == TRAIN) << "Backward on a TEST net";
  for (int i = static_cast<int>(layers_.size()) - 1; i >= 0; --i) {
    if (layer_need_backward_[i]) layers_[i]->Backward(top_vecs_[i], bottom_need_backward_[i], bottom_vecs_[i]);
  }
}

void Net::ClearParamDiffs() {
  if (param_count_ > 0) SetValues(param_count_, 0.0f, param_diff_);
}

void Net::SetValues(int64_t n, float value, float* values) {
  if (ctx_.device() == Device::kGPU) {
    gpu_set(ctx_, n, value, values);
  } else {
    cpu_set(n, value, values);
  }
}

void Net::CopyTrainedLayersFrom(const NetParameter& trained) {
  auto copy_layer = [&](const std::string& name, const google::protobuf::RepeatedPtrField<BlobProto>& blobs) {
    if (!has_layer(name)) {
      LOG(INFO) << "Ignoring source layer " << name;
      return;
    }
    Layer* layer = layer_by_name(name);
    CORTADO_REQUIRE(static_cast<int>(layer->blobs().size()) == blobs.size(), "layer ", name, " (",
                    layer->type(), "): the weights file has ", blobs.size(), " blobs but the layer has ",
                    layer->blobs().size(), "; rename the layer if it is meant to be trained afresh");
    LOG(INFO) << "Copying source layer " << name;
    for (int j = 0; j < blobs.size(); ++j) {
      Blob* target = layer->blobs()[j].get();
      if (!target->ShapeEquals(blobs.Get(j))) {
        const Blob stored(BlobProtoShape(blobs.Get(j)));  // shape only, never bound: for its text
        Fail("layer ", name, " (", layer->type(), "): blob ", j, " has shape ", target->shape_string(),
             " in the net but ", stored.shape_string(), " in the weights file; rename the layer if it "
             "is meant to be trained afresh (weights are copied by layer name)");
      }
      target->FromProto(blobs.Get(j));
    }
  };
  if (NetNeedsUpgrade(trained)) {  // V0/V1 weights: copy from the upgraded form
    NetParameter upgraded(trained);
    UpgradeNet(&upgraded, "weights");
    CopyTrainedLayersFrom(upgraded);
    return;
  }
  for (const auto& layer : trained.layer()) copy_layer(layer.name(), layer.blobs());
}

void Net::CopyTrainedLayersFrom(const std::string& caffemodel_path) {
  NetParameter trained;
  if (IsHdf5Path(caffemodel_path)) {
    trained = ReadNetParameterFromHdf5(caffemodel_path);  // Caffe's .caffemodel.h5 layout
  } else {
    ReadProtoFromBinaryFile(caffemodel_path, &trained);
  }
  if (NetNeedsUpgrade(trained)) UpgradeNet(&trained, caffemodel_path);
  try {
    CopyTrainedLayersFrom(trained);
  } catch (const Error& e) {
    throw Error(caffemodel_path + ": " + e.what());
  }
}

void Net::ToProto(NetParameter* param, bool write_diff) const {
  param->Clear();
  param->set_name(name_);
  for (const auto& layer : layers_) {
    LayerParameter* lp = param->add_layer();
    *lp = layer->layer_param();
    lp->clear_blobs();
    for (const auto& blob : layer->blobs()) blob->ToProto(lp->add_blobs(), write_diff);
  }
}

}  // namespace cortado
