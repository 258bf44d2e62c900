// onednn_common.hpp — what the oneDNN layer files share: the CPU engine, scratch alignment, the element
// types, and creating a primitive's pieces with the caller's scratchpad.
#pragma once

#include <dnnl.hpp>

#include <cstddef>

#include "cortado/kernels/onednn.hpp"

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

}  // namespace cortado::onednn
