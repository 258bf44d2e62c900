// onednn_common.hpp — what the oneDNN layer files share: the CPU engine, scratch alignment, the element
// types, creating a primitive's pieces with the caller's scratchpad, and a training forward with its
// backward (Pooling, LRN).
#pragma once

#include <dnnl.hpp>

#include <algorithm>
#include <cstddef>
#include <string>
#include <unordered_map>

#include "../onednn_engine.hpp"

namespace cortado::onednn {

inline const dnnl::engine& CpuEngine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// Regions of a caller's scratch start at multiples of this.
constexpr size_t kAlign = 64;
inline size_t Aligned(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

inline dnnl::memory::data_type DataTypeOf(OneDnnDataType type) {
  return type == OneDnnDataType::kBFloat16 ? dnnl::memory::data_type::bf16 : dnnl::memory::data_type::f32;
}

// Primitive attributes with the scratchpad supplied by the caller (a region of the net's workspace).
inline dnnl::primitive_attr UserScratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

// A memory object over no buffer yet; each call points it at one.
inline dnnl::memory Unbound(const dnnl::memory::desc& desc) { return dnnl::memory(desc, CpuEngine(), DNNL_MEMORY_NONE); }

// A forward primitive (training) and its backward, made together from their primitive descriptors,
// with what both need: the stream, the scratchpads (the caller's scratch), the workspace oneDNN keeps
// from the forward for the backward (when it keeps one), and each one's arguments, to which the layer
// adds its data. A run points the scratchpad and workspace at the caller's buffers and executes; the
// caller waits on the stream.
struct TrainingPrimitives {
  TrainingPrimitives(const dnnl::primitive_desc& fwd, const dnnl::primitive_desc& bwd)
      : forward(fwd),
        backward(bwd),
        implementation(std::string(fwd.impl_info_str()) + ", " + bwd.impl_info_str()),
        forward_scratchpad(Unbound(fwd.scratchpad_desc())),
        backward_scratchpad(Unbound(bwd.scratchpad_desc())),
        workspace(Unbound(fwd.workspace_desc())),
        scratchpad_bytes(std::max(fwd.scratchpad_desc().get_size(), bwd.scratchpad_desc().get_size())),
        workspace_bytes(fwd.workspace_desc().get_size()) {
    forward_args = {{DNNL_ARG_SCRATCHPAD, forward_scratchpad}};
    backward_args = {{DNNL_ARG_SCRATCHPAD, backward_scratchpad}};
    if (workspace_bytes) {
      forward_args.emplace(DNNL_ARG_WORKSPACE, workspace);
      backward_args.emplace(DNNL_ARG_WORKSPACE, workspace);
    }
  }

  void RunForward(void* workspace_buffer, void* scratchpad) {
    if (workspace_bytes) workspace.set_data_handle(workspace_buffer);
    forward_scratchpad.set_data_handle(scratchpad);
    forward.execute(stream, forward_args);
  }
  void RunBackward(const void* workspace_buffer, void* scratchpad) {
    if (workspace_bytes) workspace.set_data_handle(const_cast<void*>(workspace_buffer));
    backward_scratchpad.set_data_handle(scratchpad);
    backward.execute(stream, backward_args);
  }

  dnnl::stream stream{CpuEngine()};
  dnnl::primitive forward, backward;
  std::string implementation;
  dnnl::memory forward_scratchpad, backward_scratchpad, workspace;
  size_t scratchpad_bytes, workspace_bytes;
  std::unordered_map<int, dnnl::memory> forward_args, backward_args;
};

}  // namespace cortado::onednn
