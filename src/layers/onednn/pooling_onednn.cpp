// pooling_onednn.cpp — Pooling with oneDNN's primitives (kernels/onednn.hpp), on Cortado's NCHW
// buffers: forward (training: MAX records where each maximum was in the workspace) and backward,
// created once per shape, their scratchpads supplied by the caller.
#include <dnnl.hpp>

#include <algorithm>
#include <unordered_map>

#include "onednn_common.hpp"

namespace cortado {

struct OneDnnPooling {
  dnnl::stream stream{onednn::CpuEngine()};
  dnnl::pooling_forward forward;
  dnnl::pooling_backward backward;
  std::string implementation;
  dnnl::memory x, y, dy, dx, workspace, forward_scratchpad, backward_scratchpad;
  std::unordered_map<int, dnnl::memory> forward_args, backward_args;
  size_t scratch_bytes = 0, workspace_bytes = 0;
};

OneDnnPoolingPtr CreateOneDnnPooling(const PoolShape& s, bool max, std::string* why, OneDnnDataType type) {
  using dnnl::memory;
  const memory::dims x_dims{1, s.planes, s.height, s.width}, y_dims{1, s.planes, s.out_h, s.out_w};
  const memory::desc x_desc(x_dims, onednn::DataTypeOf(type), memory::format_tag::nchw),
      y_desc(y_dims, onednn::DataTypeOf(type), memory::format_tag::nchw);
  // Right and bottom padding: as far as the last window reaches past the image (never less than 0).
  const memory::dims strides{s.stride_h, s.stride_w}, kernel{s.kernel_h, s.kernel_w}, pad_l{s.pad_h, s.pad_w},
      pad_r{std::max(0, (s.out_h - 1) * s.stride_h + s.kernel_h - s.height - s.pad_h),
            std::max(0, (s.out_w - 1) * s.stride_w + s.kernel_w - s.width - s.pad_w)};
  if ((s.out_h - 1) * s.stride_h - s.pad_h >= s.height || (s.out_w - 1) * s.stride_w - s.pad_w >= s.width) {
    *why = "a window lies wholly in the padding";
    return {nullptr, nullptr};
  }
  const auto algorithm = max ? dnnl::algorithm::pooling_max : dnnl::algorithm::pooling_avg_include_padding;
  try {
    const dnnl::primitive_attr attr = onednn::UserScratchpad();
    const dnnl::pooling_forward::primitive_desc fwd(
        dnnl::pooling_forward::desc(dnnl::prop_kind::forward_training, algorithm, x_desc, y_desc, strides, kernel,
                                    pad_l, pad_r),
        attr, onednn::CpuEngine());
    const dnnl::pooling_backward::primitive_desc bwd(
        dnnl::pooling_backward::desc(algorithm, x_desc, y_desc, strides, kernel, pad_l, pad_r), attr,
        onednn::CpuEngine(), fwd);
    if (fwd.src_desc() != x_desc || fwd.dst_desc() != y_desc || bwd.diff_src_desc() != x_desc ||
        bwd.diff_dst_desc() != y_desc) {
      *why = "oneDNN wants other layouts";
      return {nullptr, nullptr};
    }
    OneDnnPoolingPtr pool(new OneDnnPooling, [](OneDnnPooling* p) { delete p; });
    OneDnnPooling& p = *pool;
    p.forward = dnnl::pooling_forward(fwd);
    p.backward = dnnl::pooling_backward(bwd);
    p.implementation = std::string(fwd.impl_info_str()) + ", " + bwd.impl_info_str();
    p.x = onednn::Unbound(x_desc), p.y = onednn::Unbound(y_desc);
    p.dy = onednn::Unbound(y_desc), p.dx = onednn::Unbound(x_desc);
    p.forward_scratchpad = onednn::Unbound(fwd.scratchpad_desc());
    p.backward_scratchpad = onednn::Unbound(bwd.scratchpad_desc());
    p.scratch_bytes = std::max(fwd.scratchpad_desc().get_size(), bwd.scratchpad_desc().get_size());
    p.forward_args = {{DNNL_ARG_SRC, p.x}, {DNNL_ARG_DST, p.y}, {DNNL_ARG_SCRATCHPAD, p.forward_scratchpad}};
    p.backward_args = {{DNNL_ARG_DIFF_DST, p.dy}, {DNNL_ARG_DIFF_SRC, p.dx}, {DNNL_ARG_SCRATCHPAD, p.backward_scratchpad}};
    if (max) {
      p.workspace = onednn::Unbound(fwd.workspace_desc());
      p.workspace_bytes = fwd.workspace_desc().get_size();
      p.forward_args.emplace(DNNL_ARG_WORKSPACE, p.workspace);
      p.backward_args.emplace(DNNL_ARG_WORKSPACE, p.workspace);
    }
    return pool;
  } catch (const dnnl::error& e) {
    *why = e.what();
    return {nullptr, nullptr};
  }
}

size_t OneDnnPoolingScratchBytes(const OneDnnPooling& pool) { return pool.scratch_bytes; }
size_t OneDnnPoolingWorkspaceBytes(const OneDnnPooling& pool) { return pool.workspace_bytes; }
std::string OneDnnPoolingImplementation(const OneDnnPooling& pool) { return pool.implementation; }

// The primitives are fixed at creation; a call only points the memory objects at its buffers, hence
// the const_casts.
void OneDnnPoolingForward(const OneDnnPooling& const_pool, const void* x, void* y, void* workspace, void* scratch) {
  auto& p = const_cast<OneDnnPooling&>(const_pool);
  p.x.set_data_handle(const_cast<void*>(x));
  p.y.set_data_handle(y);
  if (p.workspace_bytes) p.workspace.set_data_handle(workspace);
  p.forward_scratchpad.set_data_handle(scratch);
  p.forward.execute(p.stream, p.forward_args);
  p.stream.wait();
}

void OneDnnPoolingBackward(const OneDnnPooling& const_pool, const void* dy, void* dx, const void* workspace,
                           void* scratch) {
  auto& p = const_cast<OneDnnPooling&>(const_pool);
  p.dy.set_data_handle(const_cast<void*>(dy));
  p.dx.set_data_handle(dx);
  if (p.workspace_bytes) p.workspace.set_data_handle(const_cast<void*>(workspace));
  p.backward_scratchpad.set_data_handle(scratch);
  p.backward.execute(p.stream, p.backward_args);
  p.stream.wait();
}

}  // namespace cortado
