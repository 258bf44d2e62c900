// onnx_import_ops.cpp — the ONNX importer's operator → layer mappings: Conv/ConvTranspose, Gemm and
// MatMul (+ Add), BatchNormalization (+ Scale; Cortado's Div-by-scale-factor statistics kept raw),
// pooling, activations, element-wise arithmetic with tensors and constants, Concat, Split, Softmax, LRN
// and the reshaping operators. Each mapping checks that Cortado's layer computes the same values
// (pads, pooling output sizes and divisors, softmax axes) and otherwise throws Refusal saying why.
#include <algorithm>
#include <cfloat>
#include <cmath>

#include "onnx_import.hpp"
#include "onnx_tensors.hpp"

namespace cortado {
namespace onnx_import {
namespace {

using onnx_tensors::FindAttribute;
using onnx_tensors::FloatAttribute;
using onnx_tensors::IntAttribute;
using onnx_tensors::IntsAttribute;
using onnx_tensors::StringAttribute;

std::string Str(int64_t v) { return std::to_string(v); }


bool HasInput(const onnx::NodeProto& node, int k) { return node.input_size() > k && !node.input(k).empty(); }

// The blob of an activation input.
std::string Act(const Importer& im, const onnx::NodeProto& node, int k) {
  if (!HasInput(node, k)) throw Refusal{"input " + Str(k) + " is missing"};
  if (im.IsConstant(node.input(k)))
    throw Refusal{"input " + Str(k) + " ('" + node.input(k) + "') is a constant where Cortado needs a computed tensor"};
  return im.Blob(node.input(k));
}

const Constant& Const(const Importer& im, const onnx::NodeProto& node, int k, const char* what) {
  if (!HasInput(node, k) || !im.IsConstant(node.input(k)))
    throw Refusal{std::string("the ") + what + " (input " + Str(k) + ") must be a constant (an initializer)"};
  return im.Const(node.input(k));
}

std::vector<int64_t> KnownShape(const Importer& im, const std::string& tensor) {
  if (!im.KnownShape(tensor)) throw Refusal{"the shape of '" + tensor + "' is not known after shape inference"};
  return im.Shape(tensor);
}

// Outputs past the first must be unused (BatchNormalization's statistics, MaxPool's indices, Dropout's mask).
void OnlyFirstOutput(const Importer& im, const onnx::NodeProto& node) {
  for (int k = 1; k < node.output_size(); ++k) {
    const std::string& out = node.output(k);
    if (!out.empty() && (im.consumers.count(out) || im.graph_outputs.count(out)))
      throw Refusal{"its output " + Str(k) + " ('" + out + "') is used, which Cortado's layer does not compute"};
  }
}

LayerParameter* Layer(Importer& im, const onnx::NodeProto& node, const std::string& type,
                      const std::vector<std::string>& bottoms, const std::string& suffix = "") {
  LayerParameter* layer = im.AddLayer(node, type, suffix);
  for (const auto& b : bottoms) layer->add_bottom(b);
  layer->add_top(node.output(0));
  return layer;
}

// Spatial attributes of Conv, ConvTranspose and the pools: kernel, strides, dilations, pads (begin.., end..).
struct Window {
  std::vector<int64_t> kernel, stride, dilation, pads;
};

Window ReadWindow(const Importer& im, const onnx::NodeProto& node, std::vector<int64_t> kernel) {
  Window w;
  w.kernel = IntsAttribute(node, "kernel_shape", kernel);
  const size_t n = w.kernel.size();
  if (n != 2) throw Refusal{"only 2-D windows map (kernel_shape " + ShapeText(w.kernel) + ")"};
  w.stride = IntsAttribute(node, "strides", std::vector<int64_t>(n, 1));
  w.dilation = IntsAttribute(node, "dilations", std::vector<int64_t>(n, 1));
  w.pads = IntsAttribute(node, "pads", std::vector<int64_t>(2 * n, 0));
  if (w.stride.size() != n || w.dilation.size() != n || w.pads.size() != 2 * n)
    throw Refusal{"its strides, dilations or pads do not match its 2-D kernel"};
  for (int64_t p : w.pads)
    if (p < 0) throw Refusal{"negative pads " + ShapeText(w.pads)};
  const std::string auto_pad = StringAttribute(node, "auto_pad", "NOTSET");
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    const auto in = KnownShape(im, node.input(0));
    if (in.size() != 2 + n) throw Refusal{"auto_pad " + auto_pad + " on an input that is not 4-D"};
    for (size_t a = 0; a < n; ++a) {
      const int64_t size = in[2 + a], out = (size + w.stride[a] - 1) / w.stride[a];
      const int64_t total =
          std::max<int64_t>((out - 1) * w.stride[a] + (w.kernel[a] - 1) * w.dilation[a] + 1 - size, 0);
      const int64_t small = total / 2;
      w.pads[a] = auto_pad == "SAME_UPPER" ? small : total - small;
      w.pads[n + a] = total - w.pads[a];
    }
  } else if (auto_pad == "VALID") {
    w.pads.assign(2 * n, 0);
  }
  return w;
}

void RequireSymmetric(const Window& w) {
  if (w.pads[0] != w.pads[2] || w.pads[1] != w.pads[3])
    throw Refusal{"asymmetric pads " + ShapeText(w.pads) + " (Caffe pads both sides alike)"};
}

void SetConvGeometry(ConvolutionParameter* p, const Window& w) {
  auto put = [](int64_t h, int64_t wd, auto add, auto set_h, auto set_w) {
    if (h == wd) add(uint32_t(h));
    else { set_h(uint32_t(h)); set_w(uint32_t(wd)); }
  };
  put(w.kernel[0], w.kernel[1], [p](uint32_t v) { p->add_kernel_size(v); },
      [p](uint32_t v) { p->set_kernel_h(v); }, [p](uint32_t v) { p->set_kernel_w(v); });
  if (w.stride[0] != 1 || w.stride[1] != 1)
    put(w.stride[0], w.stride[1], [p](uint32_t v) { p->add_stride(v); },
        [p](uint32_t v) { p->set_stride_h(v); }, [p](uint32_t v) { p->set_stride_w(v); });
  if (w.pads[0] != 0 || w.pads[1] != 0)
    put(w.pads[0], w.pads[1], [p](uint32_t v) { p->add_pad(v); },
        [p](uint32_t v) { p->set_pad_h(v); }, [p](uint32_t v) { p->set_pad_w(v); });
  if (w.dilation[0] != 1 || w.dilation[1] != 1) {
    p->add_dilation(uint32_t(w.dilation[0]));
    if (w.dilation[1] != w.dilation[0]) p->add_dilation(uint32_t(w.dilation[1]));
  }
}

void MapConv(Importer& im, const onnx::NodeProto& node, bool transposed) {
  const std::string x = Act(im, node, 0);
  const Constant& weight = Const(im, node, 1, "weight");
  if (weight.dims.size() != 4) throw Refusal{"only 2-D convolutions map (weight " + ShapeText(weight.dims) + ")"};
  Window w = ReadWindow(im, node, {weight.dims[2], weight.dims[3]});
  const int64_t group = IntAttribute(node, "group", 1);
  auto pad = im.pad_into_window.find(node.input(0));
  if (pad != im.pad_into_window.end())
    for (size_t k = 0; k < 4; ++k) w.pads[k] += pad->second[k];
  RequireSymmetric(w);
  int64_t num_output = weight.dims[0];
  if (transposed) {
    for (int64_t v : IntsAttribute(node, "output_padding"))
      if (v != 0) throw Refusal{"output_padding is not 0 (Deconvolution has none)"};
    if (FindAttribute(node, "output_shape")) throw Refusal{"output_shape is given (Deconvolution has none)"};
    num_output = weight.dims[1] * group;
  }
  LayerParameter* layer = Layer(im, node, transposed ? "Deconvolution" : "Convolution", {x});
  ConvolutionParameter* p = layer->mutable_convolution_param();
  p->set_num_output(uint32_t(num_output));
  SetConvGeometry(p, w);
  if (group != 1) p->set_group(uint32_t(group));
  AddBlob(layer, weight.dims, weight.f.empty() ? weight.floats() : weight.f);
  if (HasInput(node, 2)) {
    const Constant& bias = Const(im, node, 2, "bias");
    if (bias.count() != num_output) throw Refusal{"the bias has " + Str(bias.count()) + " values, not " + Str(num_output)};
    AddBlob(layer, {num_output}, bias.floats());
  } else {
    p->set_bias_term(false);
  }
}

// A constant operand of an element-wise op against the activation `x` (ONNX broadcasting), as a Scale
// or Bias blob: axis, num_axes and the values expanded to x's axes [axis, axis + num_axes).
struct Operand {
  int64_t axis = 0, num_axes = 0;
  std::vector<int64_t> dims;
  std::vector<float> values;
  bool scalar = false;
};

Operand PlaceOperand(const Importer& im, const std::string& x, const Constant& c) {
  const std::vector<int64_t> shape = KnownShape(im, x);
  const size_t rank = shape.size();
  if (c.dims.size() > rank) throw Refusal{"the constant " + ShapeText(c.dims) + " has more axes than its operand"};
  std::vector<int64_t> aligned(rank, 1);
  std::copy(c.dims.begin(), c.dims.end(), aligned.begin() + long(rank - c.dims.size()));
  Operand op;
  int64_t first = -1, last = -1;
  for (size_t a = 0; a < rank; ++a)
    if (aligned[a] != 1) {
      if (first < 0) first = int64_t(a);
      last = int64_t(a);
      if (aligned[a] != shape[a])
        throw Refusal{"the constant " + ShapeText(c.dims) + " does not broadcast to " + ShapeText(shape)};
    }
  if (first < 0) {
    op.scalar = true;
    op.values = {float(c.at(0))};
    return op;
  }
  if (first == 0) throw Refusal{"the constant " + ShapeText(c.dims) + " spans the batch axis"};
  op.axis = first;
  op.num_axes = last - first + 1;
  op.dims.assign(shape.begin() + first, shape.begin() + last + 1);
  int64_t n = 1;
  for (int64_t d : op.dims) n *= d;
  // Expand the size-1 axes inside [first, last]: element k of the blob reads the constant at the
  // same index with broadcast axes held at 0.
  op.values.resize(size_t(n));
  for (int64_t k = 0; k < n; ++k) {
    int64_t rest = k, from = 0, from_stride = 1, stride = n;
    std::vector<int64_t> idx(op.dims.size());
    for (size_t a = 0; a < op.dims.size(); ++a) {
      stride /= op.dims[a];
      idx[a] = rest / stride;
      rest %= stride;
    }
    for (int64_t a = int64_t(op.dims.size()) - 1; a >= 0; --a) {
      const int64_t cd = aligned[size_t(first + a)];
      if (cd != 1) from += idx[size_t(a)] * from_stride;
      from_stride *= cd;
    }
    op.values[size_t(k)] = float(c.at(from));
  }
  return op;
}

// The Add that follows a Mul by the constant `scale` when it is the Mul's only reader and adds a
// constant over the same axes (not a scalar): with it the pair is one Scale layer with a bias.
const onnx::NodeProto* BiasOfScale(const Importer& im, const onnx::NodeProto& mul, const Operand& scale) {
  auto readers = im.consumers.find(mul.output(0));
  if (readers == im.consumers.end() || readers->second.size() != 1 || im.graph_outputs.count(mul.output(0)))
    return nullptr;
  const onnx::NodeProto* add = readers->second[0];
  if (add->op_type() != "Add" || add->input_size() != 2) return nullptr;
  const std::string& other = add->input(0) == mul.output(0) ? add->input(1) : add->input(0);
  if (!im.IsConstant(other) || !im.KnownShape(mul.output(0))) return nullptr;
  try {
    const Operand beta = PlaceOperand(im, mul.output(0), im.Const(other));
    if (beta.scalar || beta.axis != scale.axis || beta.num_axes != scale.num_axes) return nullptr;
  } catch (const Refusal&) {
    return nullptr;
  }
  return add;
}

void MapBinary(Importer& im, const onnx::NodeProto& node) {
  const std::string& op = node.op_type();
  bool any_const = false;
  for (const auto& in : node.input()) any_const = any_const || im.IsConstant(in);
  if (!any_const) {
    std::vector<std::string> bottoms;
    const auto shape = KnownShape(im, node.input(0));
    for (int k = 0; k < node.input_size(); ++k) {
      if (KnownShape(im, node.input(k)) != shape)
        throw Refusal{"its inputs' shapes differ (" + ShapeText(shape) + " and " + ShapeText(im.Shape(node.input(k))) +
                      "); Eltwise needs equal shapes"};
      bottoms.push_back(Act(im, node, k));
    }
    if (op == "Div") throw Refusal{"division of two computed tensors has no Cortado layer"};
    if (op == "Min") throw Refusal{"the minimum of computed tensors has no Cortado layer"};
    LayerParameter* layer = Layer(im, node, "Eltwise", bottoms);
    auto* p = layer->mutable_eltwise_param();
    if (op == "Mul") p->set_operation(EltwiseParameter::PROD);
    else if (op == "Max") p->set_operation(EltwiseParameter::MAX);
    else p->set_operation(EltwiseParameter::SUM);
    if (op == "Sub") {
      p->add_coeff(1);
      p->add_coeff(-1);
    }
    return;
  }
  if (node.input_size() != 2) throw Refusal{"it mixes constants with more than one computed tensor"};
  const bool const_first = im.IsConstant(node.input(0));
  const int act_index = const_first ? 1 : 0;
  const std::string x = Act(im, node, act_index);
  const Constant& c = im.Const(node.input(1 - act_index));
  Operand operand = PlaceOperand(im, node.input(act_index), c);
  if (const_first && (op == "Sub" || op == "Div")) {
    if (op == "Div" || !operand.scalar) throw Refusal{"a constant " + op + " a computed tensor has no Cortado layer"};
    LayerParameter* layer = Layer(im, node, "Power", {x});
    layer->mutable_power_param()->set_scale(-1);
    layer->mutable_power_param()->set_shift(operand.values[0]);
    return;
  }
  if (op != "Add" && op != "Sub" && op != "Mul" && op != "Div")
    throw Refusal{op + " with a constant has no Cortado layer"};
  const bool additive = op == "Add" || op == "Sub";
  for (float& v : operand.values) {
    if (op == "Sub") v = -v;
    if (op == "Div") v = 1.0f / v;
  }
  if (operand.scalar) {
    LayerParameter* layer = Layer(im, node, "Power", {x});
    if (additive) layer->mutable_power_param()->set_shift(operand.values[0]);
    else layer->mutable_power_param()->set_scale(operand.values[0]);
    return;
  }
  if (op == "Mul") {
    if (const onnx::NodeProto* add = BiasOfScale(im, node, operand)) {
      // Mul then Add of constants over the same axes (a Scale layer with its bias, as Cortado's
      // exporter writes one): one Scale layer with both blobs.
      LayerParameter* layer = im.AddLayer(node, "Scale");
      layer->add_bottom(x);
      layer->add_top(add->output(0));
      layer->mutable_scale_param()->set_axis(int32_t(operand.axis));
      layer->mutable_scale_param()->set_num_axes(int32_t(operand.num_axes));
      layer->mutable_scale_param()->set_bias_term(true);
      AddBlob(layer, operand.dims, operand.values);
      const std::string& beta = add->input(0) == node.output(0) ? add->input(1) : add->input(0);
      AddBlob(layer, operand.dims, PlaceOperand(im, node.output(0), im.Const(beta)).values);
      im.absorbed.insert(add);
      return;
    }
  }
  LayerParameter* layer = Layer(im, node, additive ? "Bias" : "Scale", {x});
  if (additive) {
    layer->mutable_bias_param()->set_axis(int32_t(operand.axis));
    layer->mutable_bias_param()->set_num_axes(int32_t(operand.num_axes));
  } else {
    layer->mutable_scale_param()->set_axis(int32_t(operand.axis));
    layer->mutable_scale_param()->set_num_axes(int32_t(operand.num_axes));
  }
  AddBlob(layer, operand.dims, operand.values);
}

void MapGemm(Importer& im, const onnx::NodeProto& node) {
  const std::string a = Act(im, node, 0);
  if (im.Rank(node.input(0)) != 2) throw Refusal{"input A is not 2-D"};
  if (IntAttribute(node, "transA", 0) != 0) throw Refusal{"transA = 1 (InnerProduct cannot transpose its input)"};
  const Constant& b = Const(im, node, 1, "weight B");
  if (b.dims.size() != 2) throw Refusal{"B is not 2-D"};
  const bool trans_b = IntAttribute(node, "transB", 0) != 0;
  const float alpha = FloatAttribute(node, "alpha", 1.0f), beta = FloatAttribute(node, "beta", 1.0f);
  const int64_t n = trans_b ? b.dims[0] : b.dims[1];
  LayerParameter* layer = Layer(im, node, "InnerProduct", {a});
  auto* p = layer->mutable_inner_product_param();
  p->set_num_output(uint32_t(n));
  if (!trans_b) p->set_transpose(true);
  std::vector<float> weight = b.floats();
  if (alpha != 1.0f)
    for (float& v : weight) v *= alpha;
  AddBlob(layer, b.dims, weight);
  if (HasInput(node, 2) && beta != 0.0f) {
    const Constant& c = Const(im, node, 2, "bias C");
    std::vector<float> bias = c.floats();
    if (c.count() == 1) bias.assign(size_t(n), bias[0]);
    else if (c.count() != n) throw Refusal{"C " + ShapeText(c.dims) + " is not one value per output"};
    if (beta != 1.0f)
      for (float& v : bias) v *= beta;
    AddBlob(layer, {n}, bias);
  } else {
    p->set_bias_term(false);
  }
}

// MatMul(x, constant K×N) → InnerProduct (transpose, on the last axis); a following Add of a constant
// vector of N values, the MatMul's only reader, becomes its bias.
void MapMatMul(Importer& im, const onnx::NodeProto& node) {
  const std::string x = Act(im, node, 0);
  const Constant& b = Const(im, node, 1, "second operand");
  if (b.dims.size() != 2) throw Refusal{"the constant operand " + ShapeText(b.dims) + " is not 2-D"};
  const int64_t rank = im.Rank(node.input(0));
  if (rank < 2) throw Refusal{"the input is not at least 2-D"};
  const int64_t n = b.dims[1];
  const onnx::NodeProto* add = nullptr;
  auto readers = im.consumers.find(node.output(0));
  if (readers != im.consumers.end() && readers->second.size() == 1 && !im.graph_outputs.count(node.output(0))) {
    const onnx::NodeProto* r = readers->second[0];
    if (r->op_type() == "Add" && r->input_size() == 2) {
      const std::string& other = r->input(0) == node.output(0) ? r->input(1) : r->input(0);
      if (im.IsConstant(other) && im.Const(other).count() == n && im.Const(other).dims.back() == n) add = r;
    }
  }
  LayerParameter* layer = im.AddLayer(node, "InnerProduct");
  layer->add_bottom(x);
  layer->add_top(add ? add->output(0) : node.output(0));
  auto* p = layer->mutable_inner_product_param();
  p->set_num_output(uint32_t(n));
  p->set_transpose(true);
  p->set_axis(int32_t(rank - 1));
  AddBlob(layer, b.dims, b.floats());
  if (add) {
    const std::string& other = add->input(0) == node.output(0) ? add->input(1) : add->input(0);
    AddBlob(layer, {n}, im.Const(other).floats());
    im.absorbed.insert(add);
  } else {
    p->set_bias_term(false);
  }
}

// Cortado's exporter writes a BatchNorm's statistics as Div(raw, scale factor): the raw blob and factor.
bool RawStatistic(const Importer& im, const std::string& tensor, std::vector<float>* raw, float* factor) {
  auto p = im.producer.find(tensor);
  if (p == im.producer.end() || p->second->op_type() != "Div") return false;
  const auto& div = *p->second;
  if (!im.IsConstant(div.input(0)) || !im.IsConstant(div.input(1))) return false;
  const Constant &r = im.Const(div.input(0)), &f = im.Const(div.input(1));
  // The factor is one value, or one per channel all equal (OpenCV folds only same-shaped divisions).
  if (r.integer || f.integer || f.count() < 1) return false;
  if (!std::all_of(f.f.begin(), f.f.end(), [&f](float v) { return v == f.f[0]; })) return false;
  *raw = r.f;
  *factor = f.f[0];
  return true;
}

void MapBatchNorm(Importer& im, const onnx::NodeProto& node) {
  const std::string x = Act(im, node, 0);
  OnlyFirstOutput(im, node);
  if (IntAttribute(node, "training_mode", 0) != 0) throw Refusal{"training_mode = 1"};
  const Constant& scale = Const(im, node, 1, "scale");
  const Constant& bias = Const(im, node, 2, "bias");
  const Constant& mean = Const(im, node, 3, "mean");
  const Constant& var = Const(im, node, 4, "variance");
  const int64_t c = scale.count();
  if (bias.count() != c || mean.count() != c || var.count() != c)
    throw Refusal{"its scale, bias, mean and variance differ in size"};
  std::vector<float> raw_mean, raw_var;
  float mean_factor = 1, var_factor = 1;
  const bool raw = RawStatistic(im, node.input(3), &raw_mean, &mean_factor) &&
                   RawStatistic(im, node.input(4), &raw_var, &var_factor) && mean_factor == var_factor;
  LayerParameter* bn = Layer(im, node, "BatchNorm", {x});
  auto* p = bn->mutable_batch_norm_param();
  p->set_eps(FloatAttribute(node, "epsilon", 1e-5f));
  if (FindAttribute(node, "momentum")) p->set_moving_average_fraction(FloatAttribute(node, "momentum", 0.9f));
  AddBlob(bn, {c}, raw ? raw_mean : mean.floats());
  AddBlob(bn, {c}, raw ? raw_var : var.floats());
  AddBlob(bn, {1}, {raw ? mean_factor : 1.0f});
  const std::vector<float> gamma = scale.floats(), beta = bias.floats();
  const bool identity = std::all_of(gamma.begin(), gamma.end(), [](float v) { return v == 1.0f; }) &&
                        std::all_of(beta.begin(), beta.end(), [](float v) { return v == 0.0f; });
  if (im.from_cortado && identity) return;
  LayerParameter* s = im.AddLayer(node, "Scale", "_scale");
  s->add_bottom(node.output(0));
  s->add_top(node.output(0));
  s->mutable_scale_param()->set_bias_term(true);
  AddBlob(s, {c}, gamma);
  AddBlob(s, {c}, beta);
}

// Caffe's pooled size (its rule: the last window starts inside the image or its begin pad).
int64_t CaffePooledSize(int64_t size, int64_t kernel, int64_t pad, int64_t stride, bool ceil_mode) {
  const double span = double(size + 2 * pad - kernel) / double(stride);
  int64_t out = int64_t(ceil_mode ? std::ceil(span) : std::floor(span)) + 1;
  if (pad > 0 && (out - 1) * stride >= size + pad) --out;
  return out;
}

void MapPool(Importer& im, const onnx::NodeProto& node) {
  const std::string x = Act(im, node, 0);
  OnlyFirstOutput(im, node);
  const bool average = node.op_type() == "AveragePool";
  auto in = KnownShape(im, node.input(0));
  if (in.size() != 4) throw Refusal{"only 4-D (N, C, H, W) inputs map"};
  Window w = ReadWindow(im, node, {});
  for (int64_t d : w.dilation)
    if (d != 1) throw Refusal{"dilations " + ShapeText(w.dilation) + " (Caffe's pooling has none)"};
  const bool onnx_ceil = IntAttribute(node, "ceil_mode", 0) != 0;
  const bool include_pad = IntAttribute(node, "count_include_pad", 0) != 0;
  // A zero Pad of p cells before an AveragePool that does not count pads (as Cortado's exporter writes
  // an AVE pooling with pad p): the divisor counts the window within [−p, size + p), Caffe's AVE with pad p.
  const auto pre = im.pad_into_window.find(node.input(0));
  const bool padded = pre != im.pad_into_window.end();
  if (padded) {
    const std::vector<int64_t>& pad = pre->second;  // begin h, w, end h, w
    if (!average || include_pad) throw Refusal{"a zero Pad maps into an AveragePool only with count_include_pad = 0"};
    for (int a = 0; a < 2; ++a) {
      if (pad[size_t(a)] != pad[size_t(2 + a)] || w.pads[a] != 0)
        throw Refusal{"the Pad before it pads " + ShapeText(pad) + " and it pads " + ShapeText(w.pads) +
                      " (Caffe pads the beginning and the end alike)"};
      in[size_t(2 + a)] -= 2 * pad[size_t(a)];
      w.pads[a] = pad[size_t(a)];
      w.pads[2 + a] += pad[size_t(a)];
    }
  }
  std::vector<int64_t> out = im.Shape(node.output(0));
  for (int a = 0; a < 2; ++a) {
    if (out.size() == 4 && out[size_t(2 + a)] >= 0) continue;
    const double span = double(in[2 + a] + w.pads[a] + w.pads[2 + a] - w.kernel[a]) / double(w.stride[a]);
    if (out.size() != 4) out.assign(4, -1);
    out[size_t(2 + a)] = int64_t(onnx_ceil ? std::ceil(span) : std::floor(span)) + 1;
  }
  for (int a = 0; a < 2; ++a)
    if (w.pads[2 + a] < w.pads[a])
      throw Refusal{"pads " + ShapeText(w.pads) + " pad the end less than the beginning (Caffe pads both alike)"};
  // Caffe's pad is the begin pad; the round mode is the one that gives ONNX's output size.
  bool chosen = false, ceil_mode = onnx_ceil;
  for (bool mode : {onnx_ceil, !onnx_ceil}) {
    bool fits = true;
    for (int a = 0; a < 2; ++a)
      fits = fits && CaffePooledSize(in[2 + a], w.kernel[a], w.pads[a], w.stride[a], mode) == out[size_t(2 + a)];
    if (fits) {
      ceil_mode = mode;
      chosen = true;
      break;
    }
  }
  if (!chosen)
    throw Refusal{"Caffe's pooled size differs from ONNX's output " + ShapeText(out) + " with pads " + ShapeText(w.pads)};
  if (average) {
    // The divisor of each window, axis by axis: Caffe counts the window within [−pad, size + pad).
    for (int a = 0; a < 2; ++a) {
      const int64_t size = in[2 + a], k = w.kernel[a], s = w.stride[a], pb = w.pads[a], pe = w.pads[2 + a];
      for (int64_t o = 0; o < out[size_t(2 + a)]; ++o) {
        const int64_t start = o * s - pb;
        const int64_t caffe = std::min(start + k, size + pb) - start;
        const int64_t onnx = padded        ? std::min(start + k, size + pb) - std::max(start, -pb)
                             : include_pad ? std::min(start + k, size + pe) - start
                                           : std::min(start + k, size) - std::max<int64_t>(start, 0);
        if (caffe != onnx)
          throw Refusal{std::string("its averaging divisor differs from Caffe's (count_include_pad = ") +
                        (include_pad ? "1" : "0") + ", pads " + ShapeText(w.pads) + "; Caffe counts the pad cells)"};
      }
    }
  }
  LayerParameter* layer = Layer(im, node, "Pooling", {x});
  auto* p = layer->mutable_pooling_param();
  p->set_pool(average ? PoolingParameter::AVE : PoolingParameter::MAX);
  if (w.kernel[0] == w.kernel[1]) p->set_kernel_size(uint32_t(w.kernel[0]));
  else { p->set_kernel_h(uint32_t(w.kernel[0])); p->set_kernel_w(uint32_t(w.kernel[1])); }
  if (w.stride[0] == w.stride[1]) p->set_stride(uint32_t(w.stride[0]));
  else { p->set_stride_h(uint32_t(w.stride[0])); p->set_stride_w(uint32_t(w.stride[1])); }
  if (w.pads[0] == w.pads[1]) { if (w.pads[0]) p->set_pad(uint32_t(w.pads[0])); }
  else { p->set_pad_h(uint32_t(w.pads[0])); p->set_pad_w(uint32_t(w.pads[1])); }
  p->set_round_mode(ceil_mode ? PoolingParameter::CEIL : PoolingParameter::FLOOR);
}

void MapGlobalPool(Importer& im, const onnx::NodeProto& node, bool average) {
  const std::string x = Act(im, node, 0);
  if (im.Rank(node.input(0)) != 4) throw Refusal{"only 4-D (N, C, H, W) inputs map"};
  LayerParameter* layer = Layer(im, node, "Pooling", {x});
  layer->mutable_pooling_param()->set_pool(average ? PoolingParameter::AVE : PoolingParameter::MAX);
  layer->mutable_pooling_param()->set_global_pooling(true);
}

// Reshape to the inferred output shape; axis 0 copied (0) when `keeps_batch`, so any batch size runs.
void ReshapeTo(Importer& im, const onnx::NodeProto& node, std::vector<int64_t> dims, bool keeps_batch) {
  const std::string x = Act(im, node, 0);
  if (keeps_batch && !dims.empty()) dims[0] = 0;
  LayerParameter* layer = Layer(im, node, "Reshape", {x});
  for (int64_t d : dims) layer->mutable_reshape_param()->mutable_shape()->add_dim(d);
}

void MapReshape(Importer& im, const onnx::NodeProto& node) {
  const std::string& op = node.op_type();
  const auto in = im.Shape(node.input(0));
  if (op == "Reshape") {
    std::vector<int64_t> shape = Const(im, node, 1, "shape").ints();
    if (IntAttribute(node, "allowzero", 0) != 0 && std::count(shape.begin(), shape.end(), 0))
      throw Refusal{"allowzero = 1 with a 0 in the shape"};
    const bool batch = !shape.empty() && !in.empty() && in[0] >= 0 && shape[0] == in[0];
    ReshapeTo(im, node, shape, batch);
  } else if (op == "Flatten") {
    const int64_t rank = int64_t(in.size());
    int64_t axis = IntAttribute(node, "axis", 1);
    if (axis < 0) axis += rank;
    if (axis == 1) {
      Layer(im, node, "Flatten", {Act(im, node, 0)});
    } else if (axis == 0) {
      ReshapeTo(im, node, {1, -1}, false);
    } else {
      ReshapeTo(im, node, KnownShape(im, node.output(0)), false);
    }
  } else {  // Squeeze, Unsqueeze
    std::vector<int64_t> axes = HasInput(node, 1) ? Const(im, node, 1, "axes").ints() : IntsAttribute(node, "axes");
    const int64_t rank = op == "Squeeze" ? int64_t(in.size()) : int64_t(in.size() + axes.size());
    bool batch = !axes.empty();
    for (int64_t a : axes) batch = batch && NormalizeAxis(a, rank) != 0;
    ReshapeTo(im, node, KnownShape(im, node.output(0)), batch);
  }
}

void MapSoftmax(Importer& im, const onnx::NodeProto& node) {
  const std::string x = Act(im, node, 0);
  const auto shape = KnownShape(im, node.input(0));
  const int64_t rank = int64_t(shape.size());
  const int64_t axis = NormalizeAxis(IntAttribute(node, "axis", im.opset < 13 ? 1 : -1), rank);
  if (im.opset < 13) {
    int64_t trailing = 1;
    for (int64_t a = axis + 1; a < rank; ++a) trailing *= shape[size_t(a)];
    if (trailing != 1)
      throw Refusal{"opset " + Str(im.opset) + " Softmax normalises over axes " + Str(axis) +
                    ".. of " + ShapeText(shape) + " together; Caffe's Softmax takes one axis"};
  }
  Layer(im, node, "Softmax", {x})->mutable_softmax_param()->set_axis(int32_t(axis));
}

void MapPRelu(Importer& im, const onnx::NodeProto& node) {
  const std::string x = Act(im, node, 0);
  const Constant& slope = Const(im, node, 1, "slope");
  const auto shape = KnownShape(im, node.input(0));
  LayerParameter* layer = Layer(im, node, "PReLU", {x});
  if (slope.count() == 1) {
    layer->mutable_prelu_param()->set_channel_shared(true);
    AddBlob(layer, {}, slope.floats());
    return;
  }
  if (shape.size() < 2 || slope.count() != shape[1])
    throw Refusal{"the slope " + ShapeText(slope.dims) + " is neither one value nor one per channel of " + ShapeText(shape)};
  // One per channel: the slope's non-1 axis must be the channel axis once right-aligned with x.
  std::vector<int64_t> aligned(shape.size(), 1);
  std::copy(slope.dims.begin(), slope.dims.end(), aligned.begin() + long(shape.size() - slope.dims.size()));
  if (aligned[1] != shape[1]) throw Refusal{"the slope " + ShapeText(slope.dims) + " is not along the channel axis"};
  AddBlob(layer, {shape[1]}, slope.floats());
}

void MapClip(Importer& im, const onnx::NodeProto& node) {
  const std::string x = Act(im, node, 0);
  float lo = -FLT_MAX, hi = FLT_MAX;
  if (im.opset < 11) {
    lo = FloatAttribute(node, "min", lo);
    hi = FloatAttribute(node, "max", hi);
  } else {
    if (HasInput(node, 1)) lo = float(Const(im, node, 1, "min").at(0));
    if (HasInput(node, 2)) hi = float(Const(im, node, 2, "max").at(0));
  }
  if (lo == 0 && hi == FLT_MAX) {
    Layer(im, node, "ReLU", {x});
    return;
  }
  LayerParameter* layer = Layer(im, node, "Clip", {x});
  layer->mutable_clip_param()->set_min(lo);
  layer->mutable_clip_param()->set_max(hi);
}

void MapSplit(Importer& im, const onnx::NodeProto& node) {
  const std::string x = Act(im, node, 0);
  const auto shape = KnownShape(im, node.input(0));
  const int64_t axis = NormalizeAxis(IntAttribute(node, "axis", 0), int64_t(shape.size()));
  if (axis == 0) throw Refusal{"it splits the batch axis"};
  std::vector<int64_t> sizes = HasInput(node, 1) ? Const(im, node, 1, "split").ints() : IntsAttribute(node, "split");
  const int64_t parts = node.output_size();
  if (sizes.empty()) {
    if (shape[size_t(axis)] % parts) throw Refusal{"the axis does not split evenly"};
    sizes.assign(size_t(parts), shape[size_t(axis)] / parts);
  }
  LayerParameter* layer = im.AddLayer(node, "Slice");
  layer->add_bottom(x);
  for (const auto& out : node.output()) layer->add_top(out);
  layer->mutable_slice_param()->set_axis(int32_t(axis));
  int64_t point = 0;
  for (size_t k = 0; k + 1 < sizes.size(); ++k) layer->mutable_slice_param()->add_slice_point(uint32_t(point += sizes[k]));
}

// A Pad of nothing is its input; a zero Pad of the spatial axes read only by convolutions becomes their pads.
void MapPad(Importer& im, const onnx::NodeProto& node) {
  const std::string x = Act(im, node, 0);
  if (StringAttribute(node, "mode", "constant") != "constant") throw Refusal{"a pad mode other than constant"};
  std::vector<int64_t> pads = im.opset < 11 ? IntsAttribute(node, "pads") : Const(im, node, 1, "pads").ints();
  float value = im.opset < 11 ? FloatAttribute(node, "value", 0.0f)
                              : HasInput(node, 2) ? float(Const(im, node, 2, "constant_value").at(0)) : 0.0f;
  if (value != 0.0f) throw Refusal{"it pads with a value other than 0"};
  if (std::all_of(pads.begin(), pads.end(), [](int64_t v) { return v == 0; })) {  // pads nothing
    im.alias[node.output(0)] = x;
    return;
  }
  if (pads.size() != 8 || pads[0] || pads[1] || pads[4] || pads[5])
    throw Refusal{"only pads of the spatial axes of a 4-D tensor map (pads " + ShapeText(pads) + ")"};
  auto readers = im.consumers.find(node.output(0));
  bool windows = readers != im.consumers.end() && !im.graph_outputs.count(node.output(0));
  if (windows)
    for (const auto* r : readers->second)
      windows = windows && r->input(0) == node.output(0) &&
                (r->op_type() == "Conv" ||
                 (r->op_type() == "AveragePool" && IntAttribute(*r, "count_include_pad", 0) == 0));
  if (!windows)
    throw Refusal{"a Pad maps only into the convolutions and the AveragePools without count_include_pad that "
                  "read it, and something else reads it"};
  im.pad_into_window[node.output(0)] = {pads[2], pads[3], pads[6], pads[7]};
  im.alias[node.output(0)] = x;
}

void Alias(Importer& im, const onnx::NodeProto& node) {
  im.alias[node.output(0)] = Act(im, node, 0);
}

}  // namespace

void MapNode(Importer& im, const onnx::NodeProto& node) {
  const std::string& op = node.op_type();
  if (op == "Conv" || op == "ConvTranspose") return MapConv(im, node, op == "ConvTranspose");
  if (op == "Gemm") return MapGemm(im, node);
  if (op == "MatMul") return MapMatMul(im, node);
  if (op == "BatchNormalization") return MapBatchNorm(im, node);
  if (op == "MaxPool" || op == "AveragePool") return MapPool(im, node);
  if (op == "GlobalAveragePool" || op == "GlobalMaxPool") return MapGlobalPool(im, node, op == "GlobalAveragePool");
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Sum" || op == "Max" || op == "Min")
    return MapBinary(im, node);
  if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze") return MapReshape(im, node);
  if (op == "Softmax") return MapSoftmax(im, node);
  if (op == "PRelu") return MapPRelu(im, node);
  if (op == "Clip") return MapClip(im, node);
  if (op == "Split") return MapSplit(im, node);
  if (op == "Identity") return Alias(im, node);
  if (op == "Pad") return MapPad(im, node);
  if (op == "Dropout") {
    OnlyFirstOutput(im, node);
    if (HasInput(node, 2) && Const(im, node, 2, "training_mode").at(0) != 0) throw Refusal{"training_mode is true"};
    return Alias(im, node);
  }
  if (op == "Cast") {
    const int64_t to = IntAttribute(node, "to", 0);
    if (to != onnx::TensorProto::FLOAT) throw Refusal{"a Cast of a computed tensor to a type other than float"};
    return Alias(im, node);
  }
  if (op == "Concat") {
    std::vector<std::string> bottoms;
    for (int k = 0; k < node.input_size(); ++k) bottoms.push_back(Act(im, node, k));
    const int64_t axis = NormalizeAxis(IntAttribute(node, "axis", 1), im.Rank(node.input(0)));
    Layer(im, node, "Concat", bottoms)->mutable_concat_param()->set_axis(int32_t(axis));
    return;
  }
  if (op == "ReduceMean") {
    const int64_t rank = im.Rank(node.input(0));
    std::vector<int64_t> axes = IntsAttribute(node, "axes");
    for (auto& a : axes) a = NormalizeAxis(a, rank);
    std::sort(axes.begin(), axes.end());
    if (rank != 4 || axes != std::vector<int64_t>{2, 3} || IntAttribute(node, "keepdims", 1) != 1)
      throw Refusal{"only a mean over axes 2 and 3 of a 4-D tensor, keeping them, maps (to global pooling)"};
    return MapGlobalPool(im, node, true);
  }
  if (op == "LRN") {
    const int64_t size = IntAttribute(node, "size", 0);
    if (size % 2 != 1) throw Refusal{"size " + Str(size) + " is even (Caffe's LRN window is odd)"};
    LayerParameter* layer = Layer(im, node, "LRN", {Act(im, node, 0)});
    auto* p = layer->mutable_lrn_param();
    p->set_local_size(uint32_t(size));
    p->set_alpha(FloatAttribute(node, "alpha", 1e-4f));
    p->set_beta(FloatAttribute(node, "beta", 0.75f));
    p->set_k(FloatAttribute(node, "bias", 1.0f));
    return;
  }
  if (op == "Pow") {
    const Constant& e = Const(im, node, 1, "exponent");
    if (e.count() != 1) throw Refusal{"the exponent is not one value"};
    Layer(im, node, "Power", {Act(im, node, 0)})->mutable_power_param()->set_power(float(e.at(0)));
    return;
  }
  if (op == "Sqrt" || op == "Neg" || op == "Reciprocal") {
    auto* p = Layer(im, node, "Power", {Act(im, node, 0)})->mutable_power_param();
    if (op == "Sqrt") p->set_power(0.5f);
    else if (op == "Neg") p->set_scale(-1);
    else p->set_power(-1);
    return;
  }
  if (op == "Relu") return void(Layer(im, node, "ReLU", {Act(im, node, 0)}));
  if (op == "LeakyRelu") {
    Layer(im, node, "ReLU", {Act(im, node, 0)})->mutable_relu_param()->set_negative_slope(
        FloatAttribute(node, "alpha", 0.01f));
    return;
  }
  if (op == "Elu") {
    Layer(im, node, "ELU", {Act(im, node, 0)})->mutable_elu_param()->set_alpha(FloatAttribute(node, "alpha", 1.0f));
    return;
  }
  static const std::map<std::string, std::string> unary = {{"Sigmoid", "Sigmoid"}, {"Tanh", "TanH"},
                                                           {"Abs", "AbsVal"},     {"Softplus", "BNLL"},
                                                           {"Exp", "Exp"},        {"Log", "Log"}};
  auto u = unary.find(op);
  if (u != unary.end()) return void(Layer(im, node, u->second, {Act(im, node, 0)}));
  if (op == "Shape") throw Refusal{"the shape of its input is not known after shape inference"};
  throw Refusal{"no Cortado layer computes this operator"};
}

}  // namespace onnx_import
}  // namespace cortado
