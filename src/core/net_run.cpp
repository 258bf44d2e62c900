// net_run.cpp — a Net's forward and backward passes, parameters shared with another net, and
// weights in and out. Its memory is planned in net_memory.cpp.
#include <glog/logging.h>

#include <algorithm>
#include <filesystem>
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
      LayerRun run;
      if (ForwardRun(i, start, end, &run)) loss += run.layer->Forward(*run.bottom, *run.top);
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
      LayerRun run;
      if (ForwardRun(i, start, end, &run)) run.layer->ForwardOnDevice(*run.bottom, *run.top, loss_device_);
    }
  } catch (const Error& e) {
    throw Error(source_ + ": " + e.what());  // a bad label or record: name the prototxt as setup does
  }
}

float Net::Forward() { return ForwardFromTo(0, static_cast<int>(layers_.size()) - 1); }

void Net::Backward() { BackwardFromTo(static_cast<int>(layers_.size()) - 1, 0); }

void Net::BackwardFromTo(int start, int end) {
  CHECK(runs_backward_) << "Backward on a TEST net without force_backward";
  CHECK(start < static_cast<int>(layers_.size()) && end >= 0) << "BackwardFromTo(" << start << ", " << end << ")";
  for (int i = start; i >= end; --i) {
    LayerRun run;
    if (BackwardRun(i, start, end, &run)) run.layer->Backward(*run.top, *run.propagate_down, *run.bottom);
    if (backward_observer_) backward_observer_(i);
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

void Net::CheckTrainedLayers(const NetParameter& trained) const {
  if (NetNeedsUpgrade(trained)) {
    NetParameter upgraded(trained);
    UpgradeNet(&upgraded, "weights");
    return CheckTrainedLayers(upgraded);
  }
  for (const auto& source : trained.layer()) {
    const std::string& name = source.name();
    if (!has_layer(name)) continue;
    const Layer* layer = layer_by_name(name);
    CORTADO_REQUIRE(static_cast<int>(layer->blobs().size()) == source.blobs_size(), "layer ", name, " (",
                    layer->type(), "): the weights file has ", source.blobs_size(), " blobs but the layer has ",
                    layer->blobs().size(), "; rename the layer if it is meant to be trained afresh");
    for (int j = 0; j < source.blobs_size(); ++j) {
      const Blob& target = *layer->blobs()[j];
      const BlobProto& stored = source.blobs(j);
      if (!target.ShapeEquals(stored)) {
        const Blob stored_shape(BlobProtoShape(stored));  // shape only, never bound: for its text
        Fail("layer ", name, " (", layer->type(), "): blob ", j, " has shape ", target.shape_string(),
             " in the net but ", stored_shape.shape_string(), " in the weights file; rename the layer if it "
             "is meant to be trained afresh (weights are copied by layer name)");
      }
      const int64_t values = stored.double_data_size() > 0 ? stored.double_data_size() : stored.data_size();
      CORTADO_REQUIRE(values == target.count(), "layer ", name, " (", layer->type(), "): blob ", j, " holds ",
                      values, " values in the weights file but its shape ", target.shape_string(), " needs ",
                      target.count());
    }
  }
}

int Net::CopyTrainedLayersFrom(const NetParameter& trained) {
  if (NetNeedsUpgrade(trained)) {  // V0/V1 weights: copy from the upgraded form
    NetParameter upgraded(trained);
    UpgradeNet(&upgraded, "weights");
    return CopyTrainedLayersFrom(upgraded);
  }
  CheckTrainedLayers(trained);  // all of it, before the first blob changes
  int copied = 0;
  for (const auto& source : trained.layer()) {
    if (!has_layer(source.name())) {
      LOG(INFO) << "Ignoring source layer " << source.name();
      continue;
    }
    Layer* layer = layer_by_name(source.name());
    if (!layer->blobs().empty()) ++copied;
    LOG(INFO) << "Copying source layer " << source.name();
    for (int j = 0; j < source.blobs_size(); ++j) layer->blobs()[j]->FromProto(source.blobs(j));
  }
  return copied;
}

NetParameter Net::ReadTrainedNet(const std::string& caffemodel_path) {
  const std::string& path = caffemodel_path;
  std::error_code ec;
  CORTADO_REQUIRE(!std::filesystem::is_regular_file(path, ec) ||
                      !(PathEndsWith(path, ".solverstate") || PathEndsWith(path, ".solverstate.h5")),
                  path, " is a solver state, not weights: resume from it (trainer --snapshot, solver.restore); the "
                  "weights are in the .caffemodel written with it");
  NetParameter trained;
  if (IsHdf5Path(caffemodel_path)) {
    trained = ReadNetParameterFromHdf5(caffemodel_path);  // Caffe's .caffemodel.h5 layout
  } else {
    ReadProtoFromBinaryFile(caffemodel_path, &trained);
  }
  if (NetNeedsUpgrade(trained)) UpgradeNet(&trained, caffemodel_path);
  return trained;
}

int Net::CopyTrainedLayersFrom(const std::string& caffemodel_path) {
  const NetParameter trained = ReadTrainedNet(caffemodel_path);
  try {
    return CopyTrainedLayersFrom(trained);
  } catch (const Error& e) {
    throw Error(caffemodel_path + ": " + e.what());
  }
}

void Net::LoadWeightsFile(const std::string& caffemodel_path) {
  if (CopyTrainedLayersFrom(caffemodel_path) > 0) return;
  std::string learnable;
  int count = 0;
  for (size_t i = 0; i < layers_.size(); ++i) {
    if (layers_[i]->blobs().empty()) continue;
    if (++count <= 4) learnable += (learnable.empty() ? "" : ", ") + layer_names_[i];
  }
  if (count == 0) return;  // nothing here takes weights
  Fail(caffemodel_path, ": none of its layers matches a learnable layer of ", source_, " (", learnable,
       count > 4 ? ", ..." : "", "), so every weight would stay random; weights are copied by layer name: "
       "is it the weights file of this net?");
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
