// convolution_onednn.cpp — Convolution with oneDNN's primitives (onednn_engine.hpp).
//
// Created once per shape: forward (training), backward data and backward weights (with the bias), in
// f32 or bf16 (bf16 activations and weights, f32 bias and parameter gradients),
// their scratchpads supplied by the caller (scratchpad_mode::user). With the native layout, x, y, the
// weights and the gradients are reordered between Cortado's NCHW / OIHW buffers and oneDNN's blocked
// ones through regions of the caller's scratch. Cortado's parameter gradients accumulate (iter_size,
// shared weights): the weight and bias gradients are computed into scratch and added by a reorder
// with a sum post-op.
#include <dnnl.hpp>

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <vector>

#include "onednn_common.hpp"

namespace cortado {

namespace {

using dnnl::memory;
using onednn::Aligned;
using onednn::Unbound;
using Tag = memory::format_tag;
const dnnl::engine& Engine() { return onednn::CpuEngine(); }

// A buffer of a call: Cortado's own (plain layout), or a region of the scratch in oneDNN's layout.
struct Operand {
  memory plain;    // over Cortado's buffer
  memory native;   // over the scratch region; same as plain when the layouts agree
  size_t offset = 0;
  bool reordered = false;
  std::optional<dnnl::reorder> in, out;  // plain → native, native → plain (with sum when accumulating)
};

}  // namespace

struct OneDnnConvolution {
  dnnl::stream stream{Engine()};
  dnnl::convolution_forward forward;
  dnnl::convolution_backward_data backward_data;
  dnnl::convolution_backward_weights backward_weights;
  std::string implementation;
  bool has_bias = false;
  memory bias;  // the forward's bias, Cortado's buffer
  // Each pass's oneDNN scratchpad and operands, placed in the caller's scratch (see Create).
  memory forward_scratchpad, backward_data_scratchpad, backward_weights_scratchpad;
  size_t weights_scratchpad_offset = 0;
  Operand fx, fw, fy;         // forward
  Operand bdy, bw, bdx;       // backward data
  Operand wx, wdy, wdw, wdb;  // backward weights (wdw and wdb always in scratch, then added with a sum)
  std::unordered_map<int, memory> forward_args, backward_data_args, backward_weights_args;
  size_t forward_bytes = 0, backward_bytes = 0;
};

namespace {

// An operand described plainly as `plain_desc` over Cortado's buffer and as oneDNN wants it (`want`),
// placed at *offset of the scratch when the two differ (or always, with `always_scratch`).
// `to_native`: reordered in before the pass; `from_native`: reordered out after it (adding to
// Cortado's buffer with `accumulate`).
Operand MakeOperand(const memory::desc& plain_desc, const memory::desc& want, size_t* offset, bool to_native,
                    bool from_native, bool accumulate = false, bool always_scratch = false) {
  Operand op;
  op.plain = memory(plain_desc, Engine(), DNNL_MEMORY_NONE);
  op.reordered = always_scratch || plain_desc != want;
  if (!op.reordered) {
    op.native = op.plain;
    return op;
  }
  op.native = memory(want, Engine(), DNNL_MEMORY_NONE);
  op.offset = *offset;
  *offset += Aligned(want.get_size());
  if (to_native) op.in = dnnl::reorder(dnnl::reorder::primitive_desc(Engine(), plain_desc, Engine(), want));
  if (from_native) {
    dnnl::primitive_attr attr;
    if (accumulate) {
      dnnl::post_ops sum;
      sum.append_sum(1.0f);
      attr.set_post_ops(sum);
    }
    op.out = dnnl::reorder(dnnl::reorder::primitive_desc(Engine(), want, Engine(), plain_desc, attr));
  }
  return op;
}

// Points an operand at Cortado's buffer and at its scratch region, and reorders an input in.
void Bind(const dnnl::stream& stream, Operand& op, const void* buffer, char* scratch, bool input) {
  op.plain.set_data_handle(const_cast<void*>(buffer));
  if (!op.reordered) return;
  op.native.set_data_handle(scratch + op.offset);
  if (input && op.in) op.in->execute(const_cast<dnnl::stream&>(stream), op.plain, op.native);
}

// Reorders an output back into Cortado's buffer.
void Unbind(const dnnl::stream& stream, Operand& op) {
  if (op.reordered && op.out) op.out->execute(const_cast<dnnl::stream&>(stream), op.native, op.plain);
}

}  // namespace

OneDnnConvolutionPtr CreateOneDnnConvolution(int num, int num_output, int group, const ConvGeometry& g, bool bias,
                                             OneDnnLayout layout, std::string* why, OneDnnDataType type,
                                             bool channels_last) {
  using Dims = memory::dims;
  const auto element = onednn::DataTypeOf(type);
  const Dims x_dims{num, g.channels, g.height, g.width}, y_dims{num, num_output, g.out_h(), g.out_w()},
      b_dims{num_output};
  const Dims w_dims = group == 1 ? Dims{num_output, g.channels, g.kernel_h, g.kernel_w}
                                 : Dims{group, num_output / group, g.channels / group, g.kernel_h, g.kernel_w};
  // bf16: x, y, the weights and dx, dy in bf16; the bias and the parameter gradients stay f32 (they add
  // into Cortado's float master copies).
  const auto f32 = memory::data_type::f32;
  const Tag image = channels_last ? Tag::nhwc : Tag::nchw;
  const Tag weights = group == 1 ? Tag::oihw : Tag::goihw;
  const memory::desc x_plain(x_dims, element, image), y_plain(y_dims, element, image),
      w_plain(w_dims, element, weights), dw_plain(w_dims, f32, weights), b_plain(b_dims, f32, Tag::x);
  const bool native = layout == OneDnnLayout::kNative;
  const memory::desc x_want = native ? memory::desc(x_dims, element, Tag::any) : x_plain;
  const memory::desc y_want = native ? memory::desc(y_dims, element, Tag::any) : y_plain;
  const memory::desc w_want = native ? memory::desc(w_dims, element, Tag::any) : w_plain;
  const memory::desc dw_want = native ? memory::desc(w_dims, f32, Tag::any) : dw_plain;
  const memory::desc b_want = bias ? b_plain : memory::desc();
  const Dims strides{g.stride_h, g.stride_w}, dilates{g.dilation_h - 1, g.dilation_w - 1}, pad{g.pad_h, g.pad_w};
  const auto direct = dnnl::algorithm::convolution_direct;
  try {
    const dnnl::primitive_attr attr = onednn::UserScratchpad();
    const dnnl::convolution_forward::primitive_desc fwd(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, direct, x_want, w_want, b_want, y_want,
                                        strides, dilates, pad, pad),
        attr, Engine());
    const dnnl::convolution_backward_data::primitive_desc bwd_data(
        dnnl::convolution_backward_data::desc(direct, x_want, w_want, y_want, strides, dilates, pad, pad), attr,
        Engine(), fwd);
    const dnnl::convolution_backward_weights::primitive_desc bwd_weights(
        dnnl::convolution_backward_weights::desc(direct, x_want, dw_want, b_want, y_want, strides, dilates, pad, pad),
        attr, Engine(), fwd);
    OneDnnConvolutionPtr conv(new OneDnnConvolution, [](OneDnnConvolution* c) { delete c; });
    OneDnnConvolution& c = *conv;
    c.has_bias = bias;
    c.forward = dnnl::convolution_forward(fwd);
    c.backward_data = dnnl::convolution_backward_data(bwd_data);
    c.backward_weights = dnnl::convolution_backward_weights(bwd_weights);
    c.implementation = std::string(fwd.impl_info_str()) + ", " + bwd_data.impl_info_str() + ", " +
                       bwd_weights.impl_info_str();
    // Forward's scratch: [its scratchpad | x | w | y], the last three only where layouts differ.
    c.forward_scratchpad = Unbound(fwd.scratchpad_desc());
    size_t offset = Aligned(fwd.scratchpad_desc().get_size());
    c.fx = MakeOperand(x_plain, fwd.src_desc(), &offset, true, false);
    c.fw = MakeOperand(w_plain, fwd.weights_desc(), &offset, true, false);
    c.fy = MakeOperand(y_plain, fwd.dst_desc(), &offset, false, true);
    c.forward_bytes = offset;
    c.forward_args = {{DNNL_ARG_SRC, c.fx.native}, {DNNL_ARG_WEIGHTS, c.fw.native}, {DNNL_ARG_DST, c.fy.native},
                      {DNNL_ARG_SCRATCHPAD, c.forward_scratchpad}};
    if (bias) {
      c.bias = Unbound(b_plain);
      c.forward_args.emplace(DNNL_ARG_BIAS, c.bias);
    }
    // Backward's scratch: [data's scratchpad | dy | w | dx | weights' scratchpad | x | dy | dw | db]; the
    // two passes run one after the other, but none of backward data's regions is reused by backward
    // weights (dy may differ in layout between them).
    c.backward_data_scratchpad = Unbound(bwd_data.scratchpad_desc());
    offset = Aligned(bwd_data.scratchpad_desc().get_size());
    c.bdy = MakeOperand(y_plain, bwd_data.diff_dst_desc(), &offset, true, false);
    c.bw = MakeOperand(w_plain, bwd_data.weights_desc(), &offset, true, false);
    c.bdx = MakeOperand(x_plain, bwd_data.diff_src_desc(), &offset, false, true);
    c.backward_data_args = {{DNNL_ARG_DIFF_DST, c.bdy.native}, {DNNL_ARG_WEIGHTS, c.bw.native},
                            {DNNL_ARG_DIFF_SRC, c.bdx.native}, {DNNL_ARG_SCRATCHPAD, c.backward_data_scratchpad}};
    c.weights_scratchpad_offset = offset;
    c.backward_weights_scratchpad = Unbound(bwd_weights.scratchpad_desc());
    offset += Aligned(bwd_weights.scratchpad_desc().get_size());
    c.wx = MakeOperand(x_plain, bwd_weights.src_desc(), &offset, true, false);
    c.wdy = MakeOperand(y_plain, bwd_weights.diff_dst_desc(), &offset, true, false);
    c.wdw = MakeOperand(dw_plain, bwd_weights.diff_weights_desc(), &offset, false, true, true, true);
    c.backward_weights_args = {{DNNL_ARG_SRC, c.wx.native}, {DNNL_ARG_DIFF_DST, c.wdy.native},
                               {DNNL_ARG_DIFF_WEIGHTS, c.wdw.native},
                               {DNNL_ARG_SCRATCHPAD, c.backward_weights_scratchpad}};
    if (bias) {
      c.wdb = MakeOperand(b_plain, bwd_weights.diff_bias_desc(), &offset, false, true, true, true);
      c.backward_weights_args.emplace(DNNL_ARG_DIFF_BIAS, c.wdb.native);
    }
    c.backward_bytes = offset;
    return conv;
  } catch (const dnnl::error& e) {
    *why = e.what();
    return {nullptr, nullptr};
  }
}

size_t OneDnnConvolutionScratchBytes(const OneDnnConvolution& conv) {
  return std::max(conv.forward_bytes, conv.backward_bytes);
}

std::string OneDnnConvolutionImplementation(const OneDnnConvolution& conv) { return conv.implementation; }

// The primitives and reorders are fixed at creation; a call only points the memory objects at its
// buffers, hence the const_casts.
void OneDnnConvolutionForward(const OneDnnConvolution& const_conv, const void* x, const void* w, const void* bias,
                              void* y, void* scratch) {
  auto& c = const_cast<OneDnnConvolution&>(const_conv);
  char* s = static_cast<char*>(scratch);
  c.forward_scratchpad.set_data_handle(s);
  if (c.has_bias) c.bias.set_data_handle(const_cast<void*>(bias));
  Bind(c.stream, c.fx, x, s, true);
  Bind(c.stream, c.fw, w, s, true);
  Bind(c.stream, c.fy, y, s, false);
  c.forward.execute(c.stream, c.forward_args);
  Unbind(c.stream, c.fy);
  c.stream.wait();
}

void OneDnnConvolutionBackward(const OneDnnConvolution& const_conv, const void* x, const void* w, const void* dy,
                               void* dw, void* db, void* dx, void* scratch) {
  auto& c = const_cast<OneDnnConvolution&>(const_conv);
  char* s = static_cast<char*>(scratch);
  if (dx) {
    c.backward_data_scratchpad.set_data_handle(s);
    Bind(c.stream, c.bdy, dy, s, true);
    Bind(c.stream, c.bw, w, s, true);
    Bind(c.stream, c.bdx, dx, s, false);
    c.backward_data.execute(c.stream, c.backward_data_args);
    Unbind(c.stream, c.bdx);
  }
  if (dw || db) {
    c.backward_weights_scratchpad.set_data_handle(s + c.weights_scratchpad_offset);
    Bind(c.stream, c.wx, x, s, true);
    Bind(c.stream, c.wdy, dy, s, true);
    Bind(c.stream, c.wdw, dw, s, false);
    if (c.has_bias) Bind(c.stream, c.wdb, db, s, false);
    c.backward_weights.execute(c.stream, c.backward_weights_args);
    if (dw) Unbind(c.stream, c.wdw);
    if (db) Unbind(c.stream, c.wdb);
  }
  c.stream.wait();
}

}  // namespace cortado
