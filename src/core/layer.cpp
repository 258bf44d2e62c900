// layer.cpp — the parts of the layer contract every layer shares: blob-count checks, loss weights,
// scratch buffers and device dispatch.
#include "cortado/layer.hpp"

#include <glog/logging.h>

#include <algorithm>

#include "cortado/error.hpp"
#include "cortado/gpu.hpp"
#include "cortado/math.hpp"
#include "cortado/math_gpu.hpp"

namespace cortado {

std::string Layer::Describe() const {
  return "layer " + param_.name() + " (" + type() + ")";
}

void Layer::SetUp(const BlobVec& bottom, const BlobVec& top) {
  CheckBlobCounts(bottom, top);
  LayerSetUp(bottom, top);
  Reshape(bottom, top);
  SetLossWeights(top);
}

void Layer::CheckBlobCounts(const BlobVec& bottom, const BlobVec& top) const {
  const int nb = static_cast<int>(bottom.size());
  const int nt = static_cast<int>(top.size());
  auto need = [&](bool ok, const char* what, int n, const char* kind, int have) {
    CORTADO_REQUIRE(ok, Describe(), ": takes ", what, " ", n, " ", kind, " blob(s), but the net gives it ", have);
  };
  if (ExactNumBottomBlobs() >= 0) need(nb == ExactNumBottomBlobs(), "exactly", ExactNumBottomBlobs(), "bottom", nb);
  if (MinBottomBlobs() >= 0) need(nb >= MinBottomBlobs(), "at least", MinBottomBlobs(), "bottom", nb);
  if (MaxBottomBlobs() >= 0) need(nb <= MaxBottomBlobs(), "at most", MaxBottomBlobs(), "bottom", nb);
  if (ExactNumTopBlobs() >= 0) need(nt == ExactNumTopBlobs(), "exactly", ExactNumTopBlobs(), "top", nt);
  if (MinTopBlobs() >= 0) need(nt >= MinTopBlobs(), "at least", MinTopBlobs(), "top", nt);
  if (MaxTopBlobs() >= 0) need(nt <= MaxTopBlobs(), "at most", MaxTopBlobs(), "top", nt);
  if (EqualNumBottomTopBlobs())
    CORTADO_REQUIRE(nb == nt, Describe(), ": needs as many tops as bottoms (", nb, " bottoms, ", nt, " tops)");
}

void Layer::SetLossWeights(const BlobVec& top) {
  const int n = param_.loss_weight_size();
  if (n == 0) return;
  CORTADO_REQUIRE(n == static_cast<int>(top.size()), Describe(), ": has ", n,
                  " loss_weight values but ", top.size(), " tops; give one per top");
  for (int i = 0; i < n; ++i) set_loss(i, param_.loss_weight(i));
}

void Layer::set_loss(int top_index, float weight) {
  if (static_cast<int>(loss_.size()) <= top_index) loss_.resize(top_index + 1, 0.0f);
  loss_[top_index] = weight;
}

void Layer::set_param_propagate_down(int i, bool value) {
  if (static_cast<int>(param_propagate_down_.size()) <= i) param_propagate_down_.resize(i + 1, true);
  param_propagate_down_[i] = value;
}

Blob* Layer::AddScratch(bool with_diff, ScratchLife life) {
  scratch_diff_.push_back(with_diff);
  scratch_workspace_.push_back(false);
  scratch_life_.push_back(life);
  scratch_.push_back(std::make_unique<Blob>());
  return scratch_.back().get();
}

Blob* Layer::AddWorkspace() {
  Blob* blob = AddScratch(false);
  scratch_workspace_.back() = true;
  return blob;
}

void Layer::SetScratchLife(const Blob* scratch, ScratchLife life) {
  for (size_t i = 0; i < scratch_.size(); ++i)
    if (scratch_[i].get() == scratch) scratch_life_[i] = life;
}

std::vector<Layer::Scratch> Layer::scratch_buffers() const {
  std::vector<Scratch> out;
  for (size_t i = 0; i < scratch_.size(); ++i) out.push_back({scratch_[i].get(), scratch_diff_[i], scratch_workspace_[i], scratch_life_[i]});
  return out;
}

float Layer::Forward(const BlobVec& bottom, const BlobVec& top) {
  if (ctx_.device() == Device::kGPU) {
    Forward_gpu(bottom, top);
  } else {
    Forward_cpu(bottom, top);
  }
  // The loss is Σ weight · top, with the weights kept in the loss tops' diffs (set by the Net).
  float total = 0;
  for (size_t i = 0; i < top.size(); ++i) {
    if (loss(static_cast<int>(i)) == 0.0f) continue;
    if (ctx_.device() == Device::kCPU) {
      total += cpu_dot(top[i]->count(), top[i]->data(), top[i]->diff());
    } else {
      total += gpu_dot(ctx_, top[i]->count(), top[i]->data(), top[i]->diff());  // waits for the loss
    }
  }
  return total;
}

void Layer::ForwardOnDevice(const BlobVec& bottom, const BlobVec& top, float* device_loss) {
  CHECK(ctx_.device() == Device::kGPU) << "ForwardOnDevice on a CPU net";
  Forward_gpu(bottom, top);
  for (size_t i = 0; i < top.size(); ++i) {
    if (loss(static_cast<int>(i)) == 0.0f) continue;
    gpu_dot_accumulate(ctx_, top[i]->count(), top[i]->data(), top[i]->diff(), device_loss);
  }
}

void Layer::FailBadLabelAt(float label, int64_t position) const {
  const LabelRule rule = label_rule();
  FailBadLabel(Describe(), label, position, rule.classes,
               rule.has_ignore ? " or ignore_label " + std::to_string(rule.ignore_label) : "");
}

void Layer::CheckLabelsOnHost(int top_index, const float* labels, int64_t count) const {
  for (const auto& [top, consumer] : label_checks_) {
    if (top != top_index) continue;
    const LabelRule rule = consumer->label_rule();
    for (int64_t i = 0; i < count; ++i) {
      const int l = LabelOf(labels[i]);
      if (rule.has_ignore && l == rule.ignore_label) continue;
      if (l < 0 || l >= rule.classes) consumer->FailBadLabelAt(labels[i], i);
    }
  }
}

void Layer::Backward(const BlobVec& top, const std::vector<bool>& propagate_down,
                     const BlobVec& bottom) {
  if (ctx_.device() == Device::kGPU) {
    Backward_gpu(top, propagate_down, bottom);
  } else {
    Backward_cpu(top, propagate_down, bottom);
  }
}

bool Layer::HasGpuImplementation() const { return BuiltWithCuda(); }

void Layer::Forward_gpu(const BlobVec&, const BlobVec&) {
  Fail(Describe(), ": has no GPU implementation yet; run the net with solver_mode: CPU");
}

void Layer::Backward_gpu(const BlobVec&, const std::vector<bool>&, const BlobVec&) {
  Fail(Describe(), ": has no GPU implementation yet; run the net with solver_mode: CPU");
}

double FixedLossNormalizer(LossParameter::NormalizationMode mode, int64_t outer, int64_t inner) {
  switch (mode) {
    case LossParameter::FULL: return static_cast<double>(outer * inner);
    case LossParameter::BATCH_SIZE: return static_cast<double>(outer);
    default: return 1;
  }
}

double LossNormalizer(LossParameter::NormalizationMode mode, int64_t outer, int64_t inner, int64_t valid_count) {
  const double n = mode == LossParameter::VALID ? static_cast<double>(valid_count) : FixedLossNormalizer(mode, outer, inner);
  return std::max(n, 1.0);
}

void FailBadLabel(const std::string& who, float label, int64_t position, int64_t classes, const std::string& also) {
  Fail(who, ": label ", label, " (at position ", position, ") is outside the valid range [0, ", classes,
       "); labels must be class indices", also);
}

void NeuronLayer::SaveInput(const BlobVec& bottom) {
  if (input_copy_ != nullptr) copy_on(ctx_, bottom[0]->count(), bottom[0]->data(), input_copy_->data());
}

void LossLayer::LayerSetUp(const BlobVec& bottom, const BlobVec& top) {
  if (param_.loss_weight_size() == 0) set_loss(0, 1.0f);
}

void LossLayer::Reshape(const BlobVec& bottom, const BlobVec& top) {
  CORTADO_REQUIRE(bottom[0]->shape(0) == bottom[1]->shape(0), Describe(),
                  ": prediction and label must have the same first dimension, got ",
                  bottom[0]->shape_string(), " and ", bottom[1]->shape_string());
  top[0]->Reshape(std::vector<int>{});
}

}  // namespace cortado
