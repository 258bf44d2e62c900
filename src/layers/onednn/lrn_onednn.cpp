// lrn_onednn.cpp — LRN with oneDNN's primitives (onednn_engine.hpp): forward (training, keeping its
// workspace for the backward) and backward, created once per shape, their scratchpads supplied by the
// caller. kPlain runs on Cortado's NCHW buffers; kNative on channel blocks of 16 (8 when the channels
// do not divide by 16), where oneDNN's fast code is, with x, y, dy and dx reordered through the scratch.
#include <dnnl.hpp>

#include <optional>

#include "onednn_common.hpp"

namespace cortado {

struct OneDnnLrn : onednn::TrainingPrimitives {
  using TrainingPrimitives::TrainingPrimitives;
  // Cortado's buffers, and (native) the blocked copies in the scratch: [x | y or dy | dx | scratchpad].
  dnnl::memory x, y, dy, dx, blocked_x, blocked_y, blocked_dx;
  std::optional<dnnl::reorder> to_blocked, to_plain;
  size_t region = 0;  // bytes of one blocked tensor (0: plain)
};

OneDnnLrnPtr CreateOneDnnLrn(const LrnShape& s, OneDnnLayout layout, std::string* why, OneDnnDataType type) {
  using dnnl::memory;
  const memory::dims dims{s.num, s.channels, s.height, s.width};
  const memory::desc plain(dims, onednn::DataTypeOf(type), memory::format_tag::nchw);
  const bool native = layout == OneDnnLayout::kNative;
  const memory::desc data = native ? memory::desc(dims, onednn::DataTypeOf(type),
                                                  s.channels % 16 == 0 ? memory::format_tag::nChw16c
                                                                       : memory::format_tag::nChw8c)
                                   : plain;
  // oneDNN divides alpha by the window's size, local_size across channels and local_size² within one:
  // Caffe's coefficient (alpha over the same) is given back its factor.
  const float window = s.across ? static_cast<float>(s.size) : static_cast<float>(s.size) * s.size;
  const float alpha = s.coeff * window;
  const auto algorithm = s.across ? dnnl::algorithm::lrn_across_channels : dnnl::algorithm::lrn_within_channel;
  try {
    const dnnl::primitive_attr attr = onednn::UserScratchpad();
    const dnnl::lrn_forward::primitive_desc fwd(
        dnnl::lrn_forward::desc(dnnl::prop_kind::forward_training, algorithm, data, s.size, alpha, s.beta, s.k), attr,
        onednn::CpuEngine());
    const dnnl::lrn_backward::primitive_desc bwd(
        dnnl::lrn_backward::desc(algorithm, data, data, s.size, alpha, s.beta, s.k), attr, onednn::CpuEngine(), fwd);
    if (fwd.src_desc() != data || fwd.dst_desc() != data || bwd.diff_src_desc() != data ||
        bwd.diff_dst_desc() != data) {
      *why = "oneDNN wants other layouts";
      return {nullptr, nullptr};
    }
    OneDnnLrnPtr lrn(new OneDnnLrn(fwd, bwd), [](OneDnnLrn* l) { delete l; });
    OneDnnLrn& l = *lrn;
    for (dnnl::memory* m : {&l.x, &l.y, &l.dy, &l.dx}) *m = onednn::Unbound(plain);
    if (native) {
      l.region = onednn::Aligned(data.get_size());
      for (dnnl::memory* m : {&l.blocked_x, &l.blocked_y, &l.blocked_dx}) *m = onednn::Unbound(data);
      l.to_blocked = dnnl::reorder(dnnl::reorder::primitive_desc(onednn::CpuEngine(), plain, onednn::CpuEngine(), data));
      l.to_plain = dnnl::reorder(dnnl::reorder::primitive_desc(onednn::CpuEngine(), data, onednn::CpuEngine(), plain));
    } else {
      l.blocked_x = l.x, l.blocked_y = l.y, l.blocked_dx = l.dx;
    }
    // Native: the backward's dy is reordered into the forward's y region.
    l.forward_args.insert({{DNNL_ARG_SRC, l.blocked_x}, {DNNL_ARG_DST, l.blocked_y}});
    l.backward_args.insert({{DNNL_ARG_SRC, l.blocked_x},
                            {DNNL_ARG_DIFF_DST, native ? l.blocked_y : l.dy},
                            {DNNL_ARG_DIFF_SRC, l.blocked_dx}});
    return lrn;
  } catch (const dnnl::error& e) {
    *why = e.what();
    return {nullptr, nullptr};
  }
}

// Native: three blocked tensors before the scratchpad.
size_t OneDnnLrnScratchBytes(const OneDnnLrn& lrn) { return 3 * lrn.region + lrn.scratchpad_bytes; }
size_t OneDnnLrnWorkspaceBytes(const OneDnnLrn& lrn) { return lrn.workspace_bytes; }
std::string OneDnnLrnImplementation(const OneDnnLrn& lrn) { return lrn.implementation; }

// The primitives are fixed at creation; a call only points the memory objects at its buffers, hence
// the const_casts.
void OneDnnLrnForward(const OneDnnLrn& const_lrn, const void* x, void* y, void* workspace, void* scratch) {
  auto& l = const_cast<OneDnnLrn&>(const_lrn);
  char* s = static_cast<char*>(scratch);
  l.x.set_data_handle(const_cast<void*>(x));
  l.y.set_data_handle(y);
  if (l.to_blocked) {
    l.blocked_x.set_data_handle(s);
    l.blocked_y.set_data_handle(s + l.region);
    l.to_blocked->execute(l.stream, l.x, l.blocked_x);
  }
  l.RunForward(workspace, s + 3 * l.region);
  if (l.to_plain) l.to_plain->execute(l.stream, l.blocked_y, l.y);
  l.stream.wait();
}

void OneDnnLrnBackward(const OneDnnLrn& const_lrn, const void* x, const void* dy, void* dx, const void* workspace,
                       void* scratch) {
  auto& l = const_cast<OneDnnLrn&>(const_lrn);
  char* s = static_cast<char*>(scratch);
  l.x.set_data_handle(const_cast<void*>(x));
  l.dy.set_data_handle(const_cast<void*>(dy));
  l.dx.set_data_handle(dx);
  if (l.to_blocked) {
    l.blocked_x.set_data_handle(s);
    l.blocked_y.set_data_handle(s + l.region);
    l.blocked_dx.set_data_handle(s + 2 * l.region);
    l.to_blocked->execute(l.stream, l.x, l.blocked_x);
    l.to_blocked->execute(l.stream, l.dy, l.blocked_y);
  }
  l.RunBackward(workspace, s + 3 * l.region);
  if (l.to_plain) l.to_plain->execute(l.stream, l.blocked_dx, l.dx);
  l.stream.wait();
}

}  // namespace cortado
