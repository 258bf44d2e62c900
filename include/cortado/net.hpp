// net.hpp — a layer graph built from a NetParameter.
//
// Construction filters layers by the net state (phase, level, stages), inserts Split layers where a
// blob feeds several consumers, wires bottoms and tops by name (a top equal to its bottom is in
// place), sets every layer up (shapes only), resolves shared parameters and decides which layers
// need backward. Memory comes afterwards, in two steps, so that a solver can put several nets and its
// own history into one arena:
//   net.RequestMemory(plan);  ... plan.Allocate() ...;  net.Initialize();
// or, for a net on its own, net.AllocateOwnArena(). The plan (net_memory.cpp) gives buffers whose
// lifetimes over one forward and backward pass do not overlap the same memory, so only the net's
// outputs, the data layers' tops and the blobs named in KeepReadable keep their values after a pass.
// A layer that the prototxt runs in place but whose in-place write would destroy what an earlier
// layer's backward reads runs out of place instead (the log says which); the earlier version of the
// blob is then named "<blob> (before <layer>)".
// The learnable parameters live in one flat data buffer and one flat gradient buffer, in the order of
// learnable_params().
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cortado/blob.hpp"
#include "cortado/context.hpp"
#include "cortado/cortado.pb.h"
#include "cortado/layer.hpp"
#include "cortado/memory.hpp"

namespace cortado {

// Sets a net's default storage types to `precision` (FLOAT, BFLOAT16 or FLOAT16; the trainer's
// --precision and SolverParameter.precision): with FLOAT16, dynamic loss scaling too, unless the net
// gives a global_grad_scale of its own.
void SetNetPrecision(NetParameter* param, Type precision);

// Shared regions of a memory plan that several nets use one after another (the solver's train and
// test nets): the lifetime-packed buffers, and the workspace. -1: a region of the net's own.
struct MemorySharing {
  int pool = -1;
  int workspace = -1;
};

class Net {
 public:
  // param.state() selects the layers; source_name prefixes error messages (the prototxt path).
  Net(const NetParameter& param, Context& ctx, const std::string& source_name = "net");
  ~Net();

  // ---- memory ------------------------------------------------------------------------------------
  void RequestMemory(MemoryPlan& plan, MemorySharing sharing = {});
  // Blobs whose data and diff must stay readable after a pass (features a tool extracts, blobs a
  // script reads), besides the outputs. Call before RequestMemory; an unknown name is an Error.
  void KeepReadable(const std::vector<std::string>& blob_names);
  // After the plan is bound: aliases, shared parameters, loss weights, parameter fillers.
  void Initialize();
  void AllocateOwnArena();
  // Makes this net use `other`'s parameters for layers with the same name (a test net reading the
  // train net's weights). Call before RequestMemory; `other` must be initialised first.
  void ShareTrainedLayersWith(const Net* other);

  // ---- running -----------------------------------------------------------------------------------
  float Forward();  // returns Σ loss_weight · loss
  float ForwardFromTo(int start, int end);  // layers start..end, both included
  void Backward();
  // Backward through layers start down to end, both included (start >= end), as Caffe's.
  void BackwardFromTo(int start, int end);
  // Whether Backward may run: a TRAIN net, or one with force_backward.
  bool runs_backward() const { return runs_backward_; }
  void ClearParamDiffs();
  // Called by Backward after each layer's backward pass, with the layer's index, in backward order
  // (every layer, whether or not it has a backward pass): data-parallel training starts exchanging the
  // gradients that are complete (parallel.hpp). Empty: none.
  void SetBackwardObserver(std::function<void(int layer)> observer) { backward_observer_ = std::move(observer); }

  // ---- GPU steps without waiting (gpu_step.hpp) --------------------------------------------------
  // On a GPU net Forward() draws the step's numbers, queues every layer, then waits for the loss. A
  // training step instead calls PrepareStep (each layer's; the caller uploads the StepInputs), then
  // ForwardOnDevice over layer ranges: the weighted loss is added up in loss_device(), a device float
  // the caller zeroes and reads when it wants.
  void PrepareStep();
  void ForwardOnDevice(int start, int end);
  float* loss_device() const { return loss_device_; }

  // ---- chains run fused (net_fusion.cpp) ---------------------------------------------------------
  // With NetParameter.fuse (the default), chains of layers that run faster as one are run by one fused
  // layer (src/layers/fusion.hpp): BatchNorm → [Scale] → [ReLU | Sigmoid], Eltwise SUM → ReLU. The
  // chain's layers stay in the net, with their names, blobs and buffers; a pass runs the fused layer's
  // forward at the chain's first layer and its backward at its last (the first that backward reaches),
  // and nothing at the chain's other layers. A range (ForwardFromTo, BackwardFromTo) that covers only
  // part of a chain runs that chain layer by layer. The intermediate blobs' diffs are not written by a
  // fused backward pass, so KeepReadable of such a blob runs its chain layer by layer.
  // Layer i's forward and backward as a whole pass runs them (trainer time reports per layer this way).
  float ForwardLayer(int i);
  void BackwardLayer(int i);
  // The fused layer that runs in layer i's place, or null.
  const Layer* fused_layer_at(int i) const;

  // ---- loss scaling (mixed precision) -----------------------------------------------------------
  // The backward pass starts from each loss weight times the loss scale, so every gradient comes out
  // scaled and small 16-bit gradients keep their digits; the solver divides the parameters' gradients
  // by the scale before it updates. How the scale is chosen (NetParameter's global_grad_scale fields):
  struct LossScaling {
    float initial = 1;          // the first step's scale
    float factor = 1;           // global_grad_scale: static scale, or adaptive's K
    bool adaptive = false;      // K · 4 / (largest gradient magnitude of the previous step)
    bool dynamic = false;       // as PyTorch's GradScaler: halved on overflow, doubled after clean steps
    int growth_interval = 2000;
  };
  const LossScaling& loss_scaling() const { return loss_scaling_; }
  float loss_scale() const { return loss_scale_; }
  // Changes the scale (after Initialize): rewrites the loss tops' diffs on the net's device.
  void SetLossScale(float scale);
  // The tops whose diffs hold loss weight × loss scale (a GPU step with dynamic scaling rewrites them on
  // the device each step, from its own scale).
  struct LossTop {
    float* diff;
    int64_t count;
    float weight;
  };
  std::vector<LossTop> loss_tops() const;
  // Whether any blob is stored in 16 bits.
  bool mixed_precision() const { return mixed_precision_; }

  // ---- weights -----------------------------------------------------------------------------------
  // Copies blobs by layer name from a trained net (V0 and V1 nets are upgraded first, see upgrade.hpp).
  // Layers absent here are ignored; a blob shape mismatch is an Error naming the layer, the blob index
  // and both shapes. Every blob is checked before any is copied, so an Error leaves the weights as they
  // were. Returns the number of learnable layers given weights.
  int CopyTrainedLayersFrom(const NetParameter& trained);
  int CopyTrainedLayersFrom(const std::string& caffemodel_path);
  // What CopyTrainedLayersFrom checks first: throws that Error without copying anything.
  void CheckTrainedLayers(const NetParameter& trained) const;
  // A weights file (binary .caffemodel or HDF5 .caffemodel.h5) read and upgraded to the current format.
  static NetParameter ReadTrainedNet(const std::string& caffemodel_path);
  // A user's weights file (trainer --weights, extract_features): as CopyTrainedLayersFrom, but a file
  // that gives none of this net's learnable layers their weights is an Error naming the file and those
  // layers, not a net left with random weights.
  void LoadWeightsFile(const std::string& caffemodel_path);
  void ToProto(NetParameter* param, bool write_diff = false) const;

  // ---- structure ---------------------------------------------------------------------------------
  const std::string& name() const { return name_; }
  Phase phase() const { return phase_; }
  const std::vector<std::unique_ptr<Layer>>& layers() const { return layers_; }
  const std::vector<std::string>& layer_names() const { return layer_names_; }
  const std::vector<BlobVec>& bottom_vecs() const { return bottom_vecs_; }
  const std::vector<BlobVec>& top_vecs() const { return top_vecs_; }
  const std::vector<std::vector<int>>& top_ids() const { return top_id_vecs_; }
  const std::vector<std::vector<int>>& bottom_ids() const { return bottom_id_vecs_; }
  const std::vector<std::vector<bool>>& bottom_need_backward() const { return bottom_need_backward_; }
  const std::vector<bool>& layer_need_backward() const { return layer_need_backward_; }
  const std::vector<std::string>& blob_names() const { return blob_names_; }
  const std::vector<float>& blob_loss_weights() const { return blob_loss_weights_; }
  bool has_blob(const std::string& name) const { return blob_index_.count(name) > 0; }
  Blob* blob_by_name(const std::string& name) const;
  bool has_layer(const std::string& name) const { return layer_index_.count(name) > 0; }
  Layer* layer_by_name(const std::string& name) const;
  const std::vector<Blob*>& output_blobs() const { return output_blobs_; }
  const std::vector<int>& output_blob_indices() const { return output_blob_indices_; }

  // ---- parameters --------------------------------------------------------------------------------
  // Every parameter blob of every layer (shared ones included), and the owners among them, which
  // the solver updates; for each owner its lr_mult and decay_mult.
  const std::vector<Blob*>& params() const { return params_; }
  const std::vector<Blob*>& learnable_params() const { return learnable_params_; }
  const std::vector<float>& params_lr() const { return params_lr_; }
  const std::vector<float>& params_weight_decay() const { return params_weight_decay_; }
  float* param_data() { return param_data_; }
  float* param_diff() { return param_diff_; }
  int64_t param_count() const { return param_count_; }

  // Bytes the activations need (Caffe's "Memory required for data").
  size_t data_bytes() const { return data_bytes_; }

  // Whether a layer with this state is kept, per Caffe's include/exclude rules.
  static bool StateMeetsRule(const NetState& state, const NetStateRule& rule, const std::string& layer);
  static NetParameter FilterByState(const NetParameter& param);

 private:
  void AppendTop(const LayerParameter& lp, int layer_id, int top_id, bool in_place,
                 std::map<std::string, int>* available);
  void AppendBottom(const LayerParameter& lp, int layer_id, int bottom_id, std::map<std::string, int>* available);
  void AppendParams(const LayerParameter& lp, int layer_id);
  void DecideBackward(const NetParameter& param);
  void LogChosenEngines() const;
  // Why the layer must not write top `top_id` in place over its bottom, or "" when that is safe.
  // Asked before the layer's SetUp.
  std::string InPlaceHazard(const Layer& layer, int top_id) const;
  void SetValues(int64_t n, float value, float* values);  // on the net's device
  // GPU nets: where a layer's class labels come straight from a data layer, the data layer checks
  // them on the host (Layer::AddLabelCheck), so the consumer need not wait for the device.
  void CheckLabelsAtTheirSource();
  // Before layer i's forward: once a layer earlier in this pass has reshaped its tops in Forward
  // (Filter), every later layer is reshaped to its bottoms' new shapes, as Caffe reshapes each layer
  // on every pass. Setup shaped them for the largest case, so nothing grows past its memory.
  void FollowShapeChanges(int i);
  bool FromOtherNet(const Blob* param) const;  // one of params_shared_from_other_
  void FuseChains();
  void Unfuse(int chain);
  // What runs as layer i's forward (backward) in a pass over start..end: its chain's fused layer when the
  // range covers the chain (at the chain's first layer forward, its last backward; nothing at the
  // others), else the layer itself. False: nothing runs there.
  struct LayerRun {
    Layer* layer = nullptr;
    const BlobVec* bottom = nullptr;
    const BlobVec* top = nullptr;
    const std::vector<bool>* propagate_down = nullptr;
  };
  bool ForwardRun(int i, int start, int end, LayerRun* run);
  bool BackwardRun(int i, int start, int end, LayerRun* run);
  // The first and last layer of layer i's fused chain ((i, i) when it is in none).
  std::pair<int, int> FusedSpan(int i) const;

  std::string name_;
  std::string source_;
  Phase phase_;
  Context& ctx_;
  std::unique_ptr<Arena> own_arena_;

  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<std::string> layer_names_;
  std::map<std::string, int> layer_index_;
  std::vector<std::unique_ptr<Blob>> blobs_;
  std::vector<std::string> blob_names_;
  std::map<std::string, int> blob_index_;
  std::vector<bool> blob_need_backward_;
  std::vector<float> blob_loss_weights_;
  std::vector<BlobVec> bottom_vecs_, top_vecs_;
  std::vector<std::vector<int>> bottom_id_vecs_, top_id_vecs_;
  std::vector<std::vector<bool>> bottom_need_backward_;
  std::vector<bool> layer_need_backward_;
  std::vector<Blob*> output_blobs_;
  std::vector<int> output_blob_indices_;

  std::vector<Blob*> params_;
  std::vector<int> param_owners_;               // per param: index of its owner in params_, or -1
  std::vector<std::pair<int, int>> param_layer_indices_;  // per param: (layer, blob index)
  std::map<std::string, int> param_names_index_;
  std::vector<Blob*> learnable_params_;
  std::vector<int> learnable_param_ids_;        // per param: index into learnable_params_
  std::vector<float> params_lr_, params_weight_decay_;
  std::vector<Blob*> params_shared_from_other_;  // bound to another net's memory
  std::vector<const Blob*> params_other_source_;
  float* param_data_ = nullptr;
  float* loss_device_ = nullptr;  // GPU nets: the forward pass's weighted loss
  bool shapes_changed_ = false;   // this forward pass ran a layer that reshapes its tops (FollowShapeChanges)
  float* param_diff_ = nullptr;
  int64_t param_count_ = 0;
  size_t data_bytes_ = 0;
  bool initialized_ = false;
  bool force_backward_ = false;
  bool runs_backward_ = false;  // TRAIN, or force_backward: diffs exist and Backward may run
  bool memory_reuse_ = true;  // NetParameter.memory_reuse: buffers share memory by lifetime
  std::vector<std::pair<int, int>> last_writer_;  // per blob: (layer, top) that wrote it last so far
  std::set<int> keep_readable_;                    // blob ids
  // Planned data and diff of each blob the plan places, in the order RequestMemory asked for them,
  // bound in Initialize. A list, not a map keyed by Blob*, so that nothing depends on where the
  // blobs happen to be in memory.
  struct PlannedAddresses {
    Blob* blob = nullptr;
    float* data = nullptr;
    float* diff = nullptr;
  };
  std::vector<PlannedAddresses> planned_addresses_;
  std::function<void(int)> backward_observer_;

  // Fused chains (net_fusion.cpp): layers first..last run as `layer`.
  struct FusedChain {
    std::unique_ptr<Layer> layer;
    int first = 0, last = 0;
    BlobVec bottom, top;
    std::vector<bool> propagate_down;
    bool runs_backward = false;
    std::vector<int> inner_blobs;  // blobs whose diffs the fused backward does not write
  };
  LossScaling loss_scaling_;
  float loss_scale_ = 1;
  bool mixed_precision_ = false;
  void WriteLossDiffs();

  bool fuse_ = true;
  std::vector<FusedChain> chains_;
  std::vector<int> chain_of_;  // per layer: its chain in chains_, or −1
};

}  // namespace cortado
