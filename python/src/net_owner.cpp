// net_owner.cpp — the session state, the host mirrors of GPU memory, and the owners of the nets a
// script holds: a net built in Python (rebuilt when its inputs are reshaped) or a solver's net.
#include <algorithm>

#include "binding.hpp"
#include "cortado/error.hpp"
#include "cortado/gpu.hpp"
#include "cortado/upgrade.hpp"

namespace cortado::python {

Session& session() {
  static Session state;
  return state;
}

// ---- host mirrors -----------------------------------------------------------------------------------

std::shared_ptr<Mirror> HostMirrors::Read(float* device_values, int64_t capacity, int64_t count) {
  std::shared_ptr<Mirror>& mirror = mirrors_[device_values];
  if (mirror == nullptr || mirror->count > capacity) {
    mirror = std::make_shared<Mirror>();
    mirror->host.reset(new float[std::max<int64_t>(capacity, 1)]);
    mirror->device = device_values;
  }
  if (!mirror->fresh || mirror->count != count) {
    if (count > 0) GpuCopy(mirror->host.get(), device_values, count * sizeof(float));
    mirror->count = count;
    mirror->fresh = true;
  }
  return mirror;
}

void HostMirrors::Upload() {
  for (auto& [device, mirror] : mirrors_)
    if (mirror->fresh && mirror->count > 0) GpuCopy(device, mirror->host.get(), mirror->count * sizeof(float));
}

void HostMirrors::MarkStale() {
  for (auto& entry : mirrors_) entry.second->fresh = false;
}

// ---- owners -----------------------------------------------------------------------------------------

std::vector<int> NetOwner::InputBlobIds() {
  Net& n = net();
  std::vector<int> ids;
  for (size_t i = 0; i < n.layers().size(); ++i)
    if (std::string(n.layers()[i]->type()) == "Input")
      ids.insert(ids.end(), n.top_ids()[i].begin(), n.top_ids()[i].end());
  return ids;
}

void NetOwner::ReshapeInput(int blob_id, const std::vector<int>& shape) {
  Blob* blob = net().blob_by_name(net().blob_names()[blob_id]);
  CORTADO_REQUIRE(blob->shape() == shape, "blob '", net().blob_names()[blob_id], "': a solver's nets keep the "
                  "shapes they were planned with (", blob->shape_string(), "); change the batch size in the "
                  "prototxt, or build a cortado.Net to reshape");
}

OwnNet::OwnNet(const NetParameter& param, const std::string& source) : param_(param), source_(source) {
  if (NetNeedsUpgrade(param_)) UpgradeNet(&param_, source_);
  auto instance = std::make_shared<Instance>();
  const Session& s = session();
  instance->ctx = std::make_shared<Context>(s.device, s.seed, s.gpu_id);
  instance->net = std::make_shared<Net>(param_, *instance->ctx, source_);
  instance->net->AllocateOwnArena();
  instance->params = instance->net;
  instance_ = std::move(instance);
}

void OwnNet::ReshapeInput(int blob_id, const std::vector<int>& shape) {
  const std::string name = net().blob_names()[blob_id];
  if (net().blob_by_name(name)->shape() == shape) return;
  // The net is built again with the new input shape, at once: what a script writes into the blobs
  // next goes into the new net.
  try {
    Rebuild(instance_->params.get(), instance_->params_keepalive, {name, shape});
  } catch (const Error& e) {
    std::string dims;
    for (int d : shape) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
    Fail("reshape: input '", name, "' to (", dims, "): ", e.what());
  }
}

void OwnNet::ShareWith(NetOwner& other, std::shared_ptr<void> other_keepalive) {
  Rebuild(&other.param_net(), std::move(other_keepalive), {});
}

// Nothing of this net changes until the new one is built: a shape the layers refuse leaves it as it was.
void OwnNet::Rebuild(Net* params, std::shared_ptr<void> params_keepalive, const ResizedInput& resized) {
  // The current input shapes go into the prototxt: Input layers' and legacy net inputs'.
  Net& current = net();
  auto shape_of = [&](const std::string& blob) {
    BlobShape shape;
    const std::vector<int> dims = blob == resized.name ? resized.shape : current.blob_by_name(blob)->shape();
    for (int d : dims) shape.add_dim(d);
    return shape;
  };
  NetParameter param(param_);
  for (auto& layer : *param.mutable_layer()) {
    if (layer.type() != "Input" || !current.has_layer(layer.name())) continue;
    InputParameter* input = layer.mutable_input_param();
    input->clear_shape();
    for (const std::string& top : layer.top()) *input->add_shape() = shape_of(top);
  }
  if (param.input_size() > 0) {
    param.clear_input_shape();
    for (const std::string& name : param.input()) *param.add_input_shape() = shape_of(name);
  }
  mirrors_.Upload();  // what the script wrote reaches the parameters the new net shares

  auto instance = std::make_shared<Instance>();
  instance->ctx = instance_->ctx;
  instance->params_keepalive = params_keepalive;
  // The net holding the parameters lives on in the new instance.
  instance->params = params == instance_->params.get() ? instance_->params : nullptr;
  instance->net = std::make_shared<Net>(param, *instance->ctx, source_);
  instance->net->ShareTrainedLayersWith(params);
  instance->net->AllocateOwnArena();
  if (instance->params == nullptr) instance->params = instance->net;  // shares another net's
  // Inputs that keep their shape keep their values.
  for (const auto& layer : param.layer()) {
    if (layer.type() != "Input") continue;
    for (const std::string& top : layer.top()) CopyIfSameShape(top, current, *instance->net, resized);
  }
  for (const std::string& input : param.input()) CopyIfSameShape(input, current, *instance->net, resized);
  mirrors_.Clear();  // of the old net's memory
  param_ = param;
  instance_ = std::move(instance);
}

void OwnNet::CopyIfSameShape(const std::string& blob, const Net& from, Net& to, const ResizedInput& resized) {
  if (!from.has_blob(blob) || !to.has_blob(blob) || blob == resized.name) return;
  const Blob& source = *from.blob_by_name(blob);
  Blob& target = *to.blob_by_name(blob);
  if (source.shape() == target.shape() && source.count() > 0) target.WriteData(source.ReadData());
}

}  // namespace cortado::python
