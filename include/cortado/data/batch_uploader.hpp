// batch_uploader.hpp — BatchUploader: host batches → a GPU net's tops through two device staging
// slots: the copy stream fills one while the compute stream works, ordered by events.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "cortado/blob.hpp"
#include "cortado/context.hpp"

namespace cortado {

// The hand-off of host batches to a GPU net's tops (DESIGN.md, "Data"), double-buffered so that the
// copy of batch i+1 to the device runs on the context's copy stream while the compute stream still
// works on step i. kSlots slots, each a set of page-locked host staging buffers (HostAllocate) and
// device staging buffers (scratch blobs of the data layer, bound in the net's arena), one per top;
// Forward k uses slot k % kSlots:
//   host     Stage(): waits for the slot's previous host → device copy (kSlots Forwards ago; an
//            event, bounded look-ahead, not a sync of the current step) and returns its host buffers;
//            the layer writes the batch into them;
//   copy     Upload(top): waits for "consumed[s]" (the compute stream has read device slot s for
//            the last time), copies host slot s → device slot s, records "copied[s]";
//   compute  waits for "copied[s]", copies device slot s → the top, records "consumed[s]".
// The tops keep their addresses (the CUDA graphs captured after the data layers read them) and their
// contents change in stream order on the compute stream. The host never waits for the step it queues:
// only for a copy kSlots Forwards old, which waited for the compute stream to read the slot before,
// so the host runs at most about 2·kSlots Forwards ahead of the device. Each Forward hands its own
// batch to the net, as on the CPU (exact resume is unchanged).
// On a plan-only context the staging blobs are added and shaped (the plan counts them) and nothing else
// is made: no GPU is touched, and Stage and Upload are never called.
// src/data/batch_uploader.cpp (the staging blobs), src/data/cuda/batch_copy.cu (the copies); a CPU-only
// build's stub throws for anything but a plan.
class BatchUploader {
 public:
  static constexpr int kSlots = 2;

  // floats[i] floats per top i. add_scratch is the layer's AddScratch (call from LayerSetUp): it is
  // called kSlots · floats.size() times for the device staging blobs. ctx must be a GPU context.
  BatchUploader(Context& ctx, const std::vector<int64_t>& floats, const std::function<Blob*()>& add_scratch);
  ~BatchUploader();  // waits for the copies in flight before freeing the host buffers
  BatchUploader(const BatchUploader&) = delete;
  BatchUploader& operator=(const BatchUploader&) = delete;

  // The layer's Reshape: shapes the device staging blobs of top i like top[i] (floats[i] floats).
  void Reshape(const BlobVec& top);
  // The next slot's host buffers, one per top, once that slot's previous copy has read them. Calling
  // it again without Upload (a Forward that threw) returns the same slot.
  const std::vector<float*>& Stage();
  // Queues the staged batch → device slot → top[i] as above; nothing waits on the host.
  void Upload(const BlobVec& top);

 private:
  struct State;
  // The host buffers, events and streams of a context that runs (batch_copy.cu).
  static std::shared_ptr<State> StartCopies(Context& ctx, const std::vector<int64_t>& floats);
  std::vector<int64_t> floats_;                      // per top
  std::array<std::vector<Blob*>, kSlots> staging_;  // per slot, the device staging blob of each top
  std::shared_ptr<State> state_;  // none on a plan-only context (shared_ptr: State is complete only there)
};

}  // namespace cortado
