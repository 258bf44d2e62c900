// layer.hpp — the contract every layer keeps.
//
// Life of a layer inside a Net:
//   1. constructed from its LayerParameter and the Context (device, RNG);
//   2. SetUp(bottom, top): checks blob counts, LayerSetUp (reads parameters, declares the shapes of
//      learnable blobs), Reshape (sets top shapes and the shapes of scratch buffers). Nothing is
//      allocated: shapes only;
//   3. the Net's memory plan binds tops, learnable blobs (inside the flat parameter buffer) and the
//      buffers listed by scratch_buffers() to arena memory, then calls OnMemoryBound (a layer may time
//      its engines on its real buffers there);
//   4. InitParams() fills learnable blobs with their fillers (skipped when weights are copied in);
//   5. Forward / Backward, any number of times, with no allocation.
//
// Backward *accumulates* into learnable blobs' diffs (the Net zeroes them once per iteration), so
// parameters shared between layers and iter_size > 1 work without copies. Bottom diffs are written,
// not accumulated (Split layers sum the branches).
#pragma once

#include <climits>
#include <memory>
#include <string>
#include <vector>

#include "cortado/blob.hpp"
#include "cortado/context.hpp"
#include "cortado/cortado.pb.h"
#include "cortado/kernels/for_each.hpp"  // LabelOf

namespace cortado {

class Layer {
 public:
  Layer(const LayerParameter& param, Context& ctx) : param_(param), ctx_(ctx) {}
  virtual ~Layer() = default;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  // ---- setup -------------------------------------------------------------------------------------
  void SetUp(const BlobVec& bottom, const BlobVec& top);
  virtual void LayerSetUp(const BlobVec& bottom, const BlobVec& top) {}
  virtual void Reshape(const BlobVec& bottom, const BlobVec& top) = 0;
  // Fills learnable blobs after they are bound. Default: weight_filler / bias_filler of the layer's
  // own parameter message are the layer's job; layers without parameters do nothing.
  virtual void InitParams() {}
  // What OnMemoryBound may overwrite besides its tops' data: which passes the net will run.
  struct BoundPasses {
    bool backward = false;             // the net runs this layer's Backward (its tops have diffs)
    std::vector<bool> propagate_down;  // per bottom: Backward writes its diff
    bool param_diffs = false;          // the learnable blobs' diffs are this net's own, cleared after the call
  };
  // Called once by the Net when every blob is bound (tops, bottoms, learnable blobs, scratch buffers,
  // the shared workspace), before loss weights, fillers or copied weights are written and before the
  // first pass; eager, never inside a CUDA graph capture. A layer that times its engines on its real
  // buffers (cuDNN's algorithms) does it here, and may reshape its scratch buffers within their
  // capacity. The buffers hold garbage: the layer may overwrite its tops' data and the diffs `passes`
  // names, but must only read its learnable blobs' data (possibly another net's trained weights).
  // Default: nothing.
  virtual void OnMemoryBound(const BlobVec& bottom, const BlobVec& top, const BoundPasses& passes) {}

  // ---- running -----------------------------------------------------------------------------------
  // Runs the forward pass on the context's device and returns this layer's weighted loss.
  float Forward(const BlobVec& bottom, const BlobVec& top);
  // A GPU net's forward: queues the layer's work and adds its weighted loss to *device_loss (a device
  // float) on the compute stream, without waiting for anything.
  void ForwardOnDevice(const BlobVec& bottom, const BlobVec& top, float* device_loss);
  void Backward(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom);

  // ---- description -------------------------------------------------------------------------------
  virtual const char* type() const = 0;
  const LayerParameter& layer_param() const { return param_; }
  const std::string& name() const { return param_.name(); }
  Phase phase() const { return param_.phase(); }
  // "layer conv1 (Convolution)" — the prefix of every error message about this layer.
  std::string Describe() const;

  // Blob-count contract; -1 means "no constraint".
  virtual int ExactNumBottomBlobs() const { return -1; }
  virtual int MinBottomBlobs() const { return -1; }
  virtual int MaxBottomBlobs() const { return -1; }
  virtual int ExactNumTopBlobs() const { return -1; }
  virtual int MinTopBlobs() const { return -1; }
  virtual int MaxTopBlobs() const { return -1; }
  virtual bool EqualNumBottomTopBlobs() const { return false; }
  // Loss layers create their loss top even when the prototxt names none.
  virtual bool AutoTopBlobs() const { return false; }
  // Whether force_backward may ask for the gradient of this bottom (labels: no).
  virtual bool AllowForceBackward(int bottom_index) const { return true; }
  // A top that is only a view of a bottom's memory (Flatten, Reshape): the bottom's index, else -1.
  virtual int TopAliasesBottom(int top_index) const { return -1; }
  // Whether Forward may change the shapes of the tops (Filter: as many rows as were selected); the
  // Net then reshapes the layers after it on each pass.
  virtual bool ReshapesTopsInForward() const { return false; }
  // Whether the layer can run on the GPU: every layer can in a CUDA build (its arithmetic is shared
  // with the CPU, kernels/for_each.hpp, or it has GPU code of its own). A layer without GPU code says
  // false here, and the Net refuses it on a GPU net.
  virtual bool HasGpuImplementation() const;
  // Which engine computes this layer, for layers that choose one when shaped (Convolution: "im2col",
  // "onednn", "onednn_plain", "cudnn"); null for the others. The net logs a count per layer type.
  virtual const char* chosen_engine() const { return nullptr; }

  // ---- what Backward reads: the memory plan's liveness (net_memory.cpp) ------------------------
  // Forward reads the bottoms' data and writes the tops' data; Backward reads the tops' diffs and
  // writes the diffs of the bottoms it propagates to. Besides those, Backward (CPU and GPU alike) may
  // read the data of bottom i or top i; the defaults say it does, so a layer that declares nothing
  // keeps its inputs and outputs alive until its backward. Asked after SetUp.
  virtual bool BackwardReadsBottomData(int bottom_index) const { return true; }
  virtual bool BackwardReadsTopData(int top_index) const { return true; }
  // Whether the layer gives the right gradients when the prototxt runs it in place (top == bottom):
  // its backward reads no bottom data, or it saves what it reads (KeepInputWhenInPlace). Asked
  // before SetUp, so it may depend on the parameters only. The Net runs a layer that says no out
  // of place, and says so in the log.
  virtual bool InPlaceSafe() const { return false; }
  // Whether top i may be a read-only view of bottom 0's data (Split: the copies are equal). Its
  // diff stays its own. The Net makes it a view unless a later layer writes that top in place.
  virtual bool TopMayViewBottomData(int top_index) const { return false; }

  // ---- GPU steps and CUDA graphs -----------------------------------------------------------------
  // Called on the host before each step's GPU work is queued, in eager runs and graph replays alike:
  // a layer that needs new numbers every step (a dropout seed) writes them into the context's
  // StepInputs here, and its kernels read them from there.
  virtual void PrepareStep() {}
  // Whether the layer's Forward_gpu and Backward_gpu may be captured once into a CUDA graph and
  // replayed: they queue only device work (no host waits, no host reads, no allocation), with
  // arguments that do not change between steps. Layers that read data on the host are not.
  virtual bool IsCapturable() const { return !HasReader(); }

  // ---- class labels --------------------------------------------------------------------------------
  // A layer that reads class labels (a loss, Accuracy) names the bottom and the valid range: labels
  // in [0, classes), or ignore_label. A GPU layer can only learn of a bad label by waiting for the
  // device; when the labels come straight from a data layer, the Net has that layer check them on the
  // host instead (AddLabelCheck) and tells the consumer (set_labels_checked_upstream), which then
  // neither waits nor blocks graph capture.
  struct LabelRule {
    int bottom = -1;  // -1: reads no class labels
    int64_t classes = 0;
    bool has_ignore = false;
    int ignore_label = 0;
  };
  virtual LabelRule label_rule() const { return {}; }
  // The one-line error for a bad label at `position` of the label bottom.
  [[noreturn]] void FailBadLabelAt(float label, int64_t position) const;
  void set_labels_checked_upstream(bool value) { labels_checked_upstream_ = value; }
  // Data layers: whether they can check the labels of a top on the host, and the check to make.
  virtual bool CanCheckLabels() const { return false; }
  void AddLabelCheck(int top_index, const Layer* consumer) { label_checks_.push_back({top_index, consumer}); }

  // ---- learnable blobs, loss weights, scratch ----------------------------------------------------
  std::vector<std::shared_ptr<Blob>>& blobs() { return blobs_; }
  const std::vector<std::shared_ptr<Blob>>& blobs() const { return blobs_; }
  // Whether Backward computes the gradient of learnable blob i (true unless the Net turned it off,
  // e.g. for lr_mult: 0).
  bool param_propagate_down(int i) const {
    return i >= static_cast<int>(param_propagate_down_.size()) || param_propagate_down_[i];
  }
  void set_param_propagate_down(int i, bool value);
  float loss(int top_index) const {
    return top_index < static_cast<int>(loss_.size()) ? loss_[top_index] : 0.0f;
  }
  void set_loss(int top_index, float weight);
  // Buffers the layer needs between Forward and Backward (masks, column buffers, probabilities);
  // their shapes are set in Reshape and the Net binds them with the rest of the plan. A layer that
  // runs an inner layer appends the inner layer's scratch buffers and tops here.
  // How long a scratch buffer's contents matter. kAcrossSteps (the default, and what a layer that
  // keeps state between passes needs) gives the buffer memory of its own for the whole run;
  // kForwardToBackward (written by Forward, read no later than the same pass's Backward) and
  // kWithinCall (written and read inside one Forward or one Backward call) let the plan reuse its
  // memory at other times.
  enum class ScratchLife { kAcrossSteps, kForwardToBackward, kWithinCall };
  struct Scratch {
    Blob* blob;
    bool with_diff;
    bool workspace = false;  // AddWorkspace: shares one region with the net's other workspaces
    ScratchLife life = ScratchLife::kAcrossSteps;
  };
  virtual std::vector<Scratch> scratch_buffers() const;

  // ---- data readers (exact resume) ---------------------------------------------------------------
  // A layer that reads a dataset reports where its reader is: the records it has handed to the net
  // since the start, and the seed of its per-record random transforms. Restoring both makes the
  // following batches identical to those of an uninterrupted run. Other layers have no reader.
  struct ReaderState {
    uint64_t position = 0;
    uint64_t seed = 0;
  };
  virtual bool HasReader() const { return false; }
  virtual ReaderState reader_state() const { return {}; }
  virtual void RestoreReaderState(const ReaderState& state) {}
  // Seconds Forward has spent waiting for the reader's next batch, in total.
  virtual double reader_wait_seconds() const { return 0; }

 protected:
  virtual void Forward_cpu(const BlobVec& bottom, const BlobVec& top) = 0;
  virtual void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                            const BlobVec& bottom) = 0;
  virtual void Forward_gpu(const BlobVec& bottom, const BlobVec& top);
  virtual void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                            const BlobVec& bottom);

  // Declares a scratch buffer (call in LayerSetUp; reshape it in Reshape). Data only unless
  // with_diff is true.
  Blob* AddScratch(bool with_diff = false, ScratchLife life = ScratchLife::kAcrossSteps);
  // A scratch buffer whose contents matter only from this layer's Forward to its Backward in the
  // same pass (masks, saved inputs, column buffers): the plan may reuse its memory at other times.
  Blob* AddStepScratch(bool with_diff = false) { return AddScratch(with_diff, ScratchLife::kForwardToBackward); }
  // A scratch buffer whose contents matter only inside one Forward or one Backward call (a chunk's
  // columns): between the calls, other buffers may use its memory.
  Blob* AddCallScratch(bool with_diff = false) { return AddScratch(with_diff, ScratchLife::kWithinCall); }
  // Changes a scratch buffer's life once Reshape knows it (before the plan is made).
  void SetScratchLife(const Blob* scratch, ScratchLife life);
  // Declares a workspace: a data buffer whose contents matter only inside one Forward or Backward
  // call (cuDNN's), so the Net binds every layer's workspace to one region, as large as the largest.
  Blob* AddWorkspace();

  // Data layers: runs the checks AddLabelCheck asked for on the host copy of top `top_index`'s labels.
  void CheckLabelsOnHost(int top_index, const float* labels, int64_t count) const;
  // The host pointer for a GPU label check's offending value, or null when the labels were checked
  // upstream (then the launcher neither reads nor waits).
  float* BadLabelOut(float* value) const { return labels_checked_upstream_ ? nullptr : value; }
  bool labels_checked_upstream() const { return labels_checked_upstream_; }

  LayerParameter param_;
  Context& ctx_;
  std::vector<std::shared_ptr<Blob>> blobs_;
  std::vector<bool> param_propagate_down_;

 private:
  void CheckBlobCounts(const BlobVec& bottom, const BlobVec& top) const;
  void SetLossWeights(const BlobVec& top);

  std::vector<float> loss_;
  bool labels_checked_upstream_ = false;
  std::vector<std::pair<int, const Layer*>> label_checks_;  // (top, consumer)
  std::vector<std::unique_ptr<Blob>> scratch_;
  std::vector<bool> scratch_diff_;       // parallel to scratch_
  std::vector<bool> scratch_workspace_;  // parallel to scratch_
  std::vector<ScratchLife> scratch_life_;  // parallel to scratch_
};

// Loss layers: one or two bottoms (prediction, label), a scalar loss top with weight 1 by default.
class LossLayer : public Layer {
 public:
  using Layer::Layer;
  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override;
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;
  int ExactNumBottomBlobs() const override { return 2; }
  int ExactNumTopBlobs() const override { return 1; }
  bool AutoTopBlobs() const override { return true; }
  bool AllowForceBackward(int bottom_index) const override { return bottom_index != 1; }
};

// Caffe's loss normalizer for the modes known before the forward pass: FULL outer·inner, BATCH_SIZE
// outer, NONE (and VALID, whose count comes later) 1.
double FixedLossNormalizer(LossParameter::NormalizationMode mode, int64_t outer, int64_t inner);
// The normalizer a loss divides by: VALID the count of labels not ignored, else FixedLossNormalizer;
// at least 1.
double LossNormalizer(LossParameter::NormalizationMode mode, int64_t outer, int64_t inner, int64_t valid_count);

// LabelOf, the class label as the layers read it on either device: kernels/for_each.hpp.

// The one-line error for a label outside [0, classes) at `position`; `also` names what else is
// allowed (" or ignore_label N").
[[noreturn]] void FailBadLabel(const std::string& who, float label, int64_t position, int64_t classes,
                               const std::string& also = "");

// Element-wise layers: one bottom, one top of the same shape; in-place allowed.
class NeuronLayer : public Layer {
 public:
  using Layer::Layer;
  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    top[0]->ReshapeLike(*bottom[0]);
    if (input_copy_) input_copy_->ReshapeLike(*bottom[0]);
  }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }

 protected:
  // For a layer whose backward reads its input x: run in place, Forward overwrites x. LayerSetUp calls
  // KeepInputWhenInPlace, Forward calls SaveInput before writing the top, and Backward reads x
  // through ForwardInput.
  void KeepInputWhenInPlace(const BlobVec& bottom, const BlobVec& top) {
    if (top[0] == bottom[0]) input_copy_ = AddStepScratch();
  }
  // Whether Backward reads x (its saved copy when in place, else the bottom).
  bool BackwardReadsBottomData(int) const override { return input_copy_ == nullptr; }
  void SaveInput(const BlobVec& bottom);  // on the context's device
  const float* ForwardInput(const BlobVec& bottom) const { return (input_copy_ ? input_copy_ : bottom[0])->data(); }

 private:
  Blob* input_copy_ = nullptr;  // x, when a layer that needs it runs in place
};

// A layer whose arithmetic is one for both devices (kernels/for_each.hpp: Map and MapChannels run on
// the context's device, and so do the math.hpp / math_gpu.hpp calls it picks by device) writes its
// Forward and Backward once, as Forward_any and Backward_any.
template <typename Base>
class EitherDevice : public Base {
 public:
  using Base::Base;

 protected:
  virtual void Forward_any(const BlobVec& bottom, const BlobVec& top) = 0;
  virtual void Backward_any(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) = 0;

 private:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) final { Forward_any(bottom, top); }
  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) final { Forward_any(bottom, top); }
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) final {
    Backward_any(top, propagate_down, bottom);
  }
  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) final {
    Backward_any(top, propagate_down, bottom);
  }
};

}  // namespace cortado
