// pooling_onednn.cpp — Pooling with oneDNN's primitives (onednn_engine.hpp), on Cortado's NCHW
// buffers: forward (training: MAX records where each maximum was in the workspace) and backward,
// created once per shape, their scratchpads supplied by the caller.
#include <dnnl.hpp>

#include <algorithm>

#include "onednn_common.hpp"

namespace cortado {

struct OneDnnPooling : onednn::TrainingPrimitives {
  using TrainingPrimitives::TrainingPrimitives;
  dnnl::memory x, y, dy, dx;
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
    OneDnnPoolingPtr pool(new OneDnnPooling(fwd, bwd), [](OneDnnPooling* p) { delete p; });
    OneDnnPooling& p = *pool;
    p.x = onednn::Unbound(x_desc), p.y = onednn::Unbound(y_desc);
    p.dy = onednn::Unbound(y_desc), p.dx = onednn::Unbound(x_desc);
    p.forward_args.insert({{DNNL_ARG_SRC, p.x}, {DNNL_ARG_DST, p.y}});
    p.backward_args.insert({{DNNL_ARG_DIFF_DST, p.dy}, {DNNL_ARG_DIFF_SRC, p.dx}});
    return pool;
  } catch (const dnnl::error& e) {
    *why = e.what();
    return {nullptr, nullptr};
  }
}

size_t OneDnnPoolingScratchBytes(const OneDnnPooling& pool) { return pool.scratchpad_bytes; }
size_t OneDnnPoolingWorkspaceBytes(const OneDnnPooling& pool) { return pool.workspace_bytes; }
std::string OneDnnPoolingImplementation(const OneDnnPooling& pool) { return pool.implementation; }

// The primitives are fixed at creation; a call only points the memory objects at its buffers, hence
// the const_casts.
void OneDnnPoolingForward(const OneDnnPooling& const_pool, const void* x, void* y, void* workspace, void* scratch) {
  auto& p = const_cast<OneDnnPooling&>(const_pool);
  p.x.set_data_handle(const_cast<void*>(x));
  p.y.set_data_handle(y);
  p.RunForward(workspace, scratch);
  p.stream.wait();
}

void OneDnnPoolingBackward(const OneDnnPooling& const_pool, const void* dy, void* dx, const void* workspace,
                           void* scratch) {
  auto& p = const_cast<OneDnnPooling&>(const_pool);
  p.dy.set_data_handle(const_cast<void*>(dy));
  p.dx.set_data_handle(dx);
  p.RunBackward(workspace, scratch);
  p.stream.wait();
}

}  // namespace cortado
