// onnx_export_layers.cpp — the ONNX nodes of each layer type (onnx_export.hpp's EmitLayer), with
// Caffe's arithmetic exactly: pooling's ceil-mode sizes as explicit end pads (and a Pad where Caffe's
// AVE divisor counts padding that ONNX's would not), BatchNorm's scale factor as a Div of its raw
// blobs, Scale and Bias blobs shaped to broadcast at their axis, Caffe's ArgMax layouts, and
// compositions (Swish, Power, Exp, Log, WITHIN_CHANNEL LRN, MVN) where ONNX has no single operator.
// Reshape targets write the batch axis as 0 (copied) or -1 (inferred) when the batch is dynamic.
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <glog/logging.h>

#include "onnx_export.hpp"
#include "onnx_tensors.hpp"

namespace cortado {
namespace onnx_export {
namespace {

using onnx_tensors::AddFloat;
using onnx_tensors::AddInt;
using onnx_tensors::AddInts;
using Ints = std::vector<int64_t>;

int Axis(int axis, size_t rank) { return axis < 0 ? axis + int(rank) : axis; }
Ints ToInts(const std::vector<int>& v) { return Ints(v.begin(), v.end()); }

// How a Reshape target writes axis 0 when the batch is dynamic.
enum class Batch { kCopy, kInfer, kFixed };

// One layer's node writer: nodes named after the layer, initializers "<layer>/<what>".
class Emitter {
 public:
  Emitter(GraphWriter& g, const LayerIO& io) : g_(g), io_(io) {}
  const LayerIO& io() const { return io_; }
  bool dynamic() const { return g_.dynamic_batch(); }

  // A node of `op`; named after the layer (`what` empty) or "<layer>/<what>"; its outputs are new values.
  onnx::NodeProto* Node(const std::string& op, const std::vector<std::string>& inputs, const std::string& what = "",
                        int outputs = 1) {
    const std::string base = io_.name + "/" + (what.empty() ? op : what);
    std::vector<std::string> names;
    for (int k = 0; k < outputs; ++k) names.push_back(g_.UniqueValue(outputs == 1 ? base : base + "_" + std::to_string(k)));
    return g_.AddNode(op, inputs, names, what.empty() ? io_.name : io_.name + "/" + what);
  }
  std::string Op(const std::string& op, const std::vector<std::string>& inputs, const std::string& what = "") {
    return Node(op, inputs, what)->output(0);
  }
  std::string Init(const std::string& what, const Ints& dims, const std::vector<float>& values) {
    return g_.Floats(io_.name + "/" + what, dims, values);
  }
  std::string Const(const std::string& what, float value) { return g_.Scalar(io_.name + "/" + what, value); }
  std::string IntConst(const std::string& what, const Ints& values) { return g_.Ints(io_.name + "/" + what, values); }

  // x reshaped to `shape`; axis 0 as `batch` says when the batch is dynamic.
  std::string Reshape(const std::string& x, const std::vector<int>& shape, Batch batch, const std::string& what) {
    Ints dims = ToInts(shape);
    if (dynamic() && !dims.empty() && batch != Batch::kFixed) dims[0] = batch == Batch::kCopy ? 0 : -1;
    return Op("Reshape", {x, IntConst(what + "_shape", dims)}, what);
  }
  // y = x · c and y = x + c, omitted when c is the identity.
  std::string MulConst(const std::string& x, float c, const std::string& what) {
    return c == 1.0f ? x : Op("Mul", {x, Const(what, c)}, what);
  }
  std::string AddConst(const std::string& x, float c, const std::string& what) {
    return c == 0.0f ? x : Op("Add", {x, Const(what, c)}, what);
  }

 private:
  GraphWriter& g_;
  const LayerIO& io_;
};

using Tops = std::vector<std::string>;
// An emitter returns "" with *tops set, or why the layer cannot be exported.
using EmitFn = std::function<std::string(Emitter&, Tops*)>;

// A repeated geometry field: none → fallback, one value → every axis, else one per axis.
Ints PerAxis(const google::protobuf::RepeatedField<uint32_t>& values, size_t axes, int64_t fallback) {
  if (values.empty()) return Ints(axes, fallback);
  if (values.size() == 1) return Ints(axes, values[0]);
  return Ints(values.begin(), values.end());
}

std::string Convolution(Emitter& e, Tops* tops, bool deconv) {
  const LayerIO& io = e.io();
  const ConvolutionParameter& cp = io.param->convolution_param();
  const size_t rank = io.in_shapes[0].size();
  if (Axis(cp.axis(), rank) != 1) return "its channel axis is not 1 (ONNX convolves N x C x spatial)";
  const size_t spatial = rank - 2;
  const std::vector<int>& wshape = io.blob_shapes[0];
  Ints kernel(wshape.begin() + 2, wshape.end());
  Ints pad = PerAxis(cp.pad(), spatial, 0), stride = PerAxis(cp.stride(), spatial, 1),
       dilation = PerAxis(cp.dilation(), spatial, 1);
  if (cp.has_pad_h() || cp.has_pad_w()) pad = {cp.pad_h(), cp.pad_w()};
  if (cp.has_stride_h() || cp.has_stride_w()) stride = {cp.stride_h(), cp.stride_w()};
  CHECK(pad.size() == spatial && stride.size() == spatial && dilation.size() == spatial && kernel.size() == spatial)
      << io.name;
  std::vector<std::string> inputs = {io.in[0], e.Init("weight", ToInts(wshape), io.blobs[0])};
  if (cp.bias_term()) inputs.push_back(e.Init("bias", {int64_t(io.blobs[1].size())}, io.blobs[1]));
  onnx::NodeProto* node = e.Node(deconv ? "ConvTranspose" : "Conv", inputs);
  AddInts(node, "kernel_shape", kernel);
  AddInts(node, "strides", stride);
  Ints pads = pad;
  pads.insert(pads.end(), pad.begin(), pad.end());
  AddInts(node, "pads", pads);
  AddInts(node, "dilations", dilation);
  AddInt(node, "group", cp.group());
  *tops = {node->output(0)};
  return "";
}

std::string InnerProduct(Emitter& e, Tops* tops) {
  const LayerIO& io = e.io();
  const InnerProductParameter& ip = io.param->inner_product_param();
  const std::vector<int>& in = io.in_shapes[0];
  const int axis = Axis(ip.axis(), in.size());
  const int64_t outputs = ip.num_output();
  const int64_t k = int64_t(io.blobs[0].size()) / outputs;
  std::string x = io.in[0];
  if (!(in.size() == 2 && axis == 1)) {
    onnx::NodeProto* flatten = e.Node("Flatten", {x}, "flatten");
    AddInt(flatten, "axis", axis);
    x = flatten->output(0);
  }
  std::vector<std::string> inputs = {x, e.Init("weight", ip.transpose() ? Ints{k, outputs} : Ints{outputs, k},
                                               io.blobs[0])};
  if (ip.bias_term()) inputs.push_back(e.Init("bias", {outputs}, io.blobs[1]));
  onnx::NodeProto* gemm = e.Node("Gemm", inputs);
  AddInt(gemm, "transB", ip.transpose() ? 0 : 1);
  std::string y = gemm->output(0);
  // Gemm's rows are the product of the axes before `axis`: the batch times the rest, so inferred.
  if (axis != 1) y = e.Reshape(y, io.out_shapes[0], axis == 0 ? Batch::kFixed : Batch::kInfer, "reshape");
  *tops = {y};
  return "";
}

std::string Pooling(Emitter& e, Tops* tops) {
  const LayerIO& io = e.io();
  const PoolingParameter& pp = io.param->pooling_param();
  if (pp.pool() == PoolingParameter::STOCHASTIC) return "STOCHASTIC pooling has no ONNX operator";
  if (io.out_shapes.size() > 1) return "its second top (the argmax mask) has no ONNX equivalent";
  if (io.in_shapes[0].size() != 4) return "only 4-D (N x C x H x W) pooling is exported";
  const bool max = pp.pool() == PoolingParameter::MAX;
  if (pp.global_pooling()) {
    *tops = {e.Op(max ? "GlobalMaxPool" : "GlobalAveragePool", {io.in[0]})};
    return "";
  }
  Ints kernel = {pp.kernel_size(), pp.kernel_size()}, pad = {pp.pad(), pp.pad()}, stride = {pp.stride(), pp.stride()};
  if (pp.has_kernel_h() || pp.has_kernel_w()) kernel = {pp.kernel_h(), pp.kernel_w()};
  if (pp.has_pad_h() || pp.has_pad_w()) pad = {pp.pad_h(), pp.pad_w()};
  if (pp.has_stride_h() || pp.has_stride_w()) stride = {pp.stride_h(), pp.stride_w()};
  // Floor-mode ONNX pooling with end pads that give Caffe's output size (any end pad in
  // [need, need + stride − 1] does; never below 0).
  Ints end(2);
  for (int a = 0; a < 2; ++a) {
    const int64_t size = io.in_shapes[0][2 + a], out = io.out_shapes[0][2 + a];
    end[a] = std::max<int64_t>((out - 1) * stride[a] + kernel[a] - size - pad[a], 0);
    if ((out - 1) * stride[a] - pad[a] >= size)
      return "its last window lies wholly past the image (ceil mode with stride > kernel), which Caffe "
             "pools to 0 and ONNX's pooling cannot";
  }
  std::string x = io.in[0];
  Ints pads = {pad[0], pad[1], end[0], end[1]};
  if (!max && (pad[0] > 0 || pad[1] > 0)) {
    // Caffe's divisor counts the padding up to H + pad but not a last window's cells past it. As
    // explicit zeros (Pad) the padding counts, and the overhang is pads that count_include_pad = 0
    // leaves out. (Not count_include_pad = 1 where nothing overhangs: OpenCV's dnn ignores it.)
    x = e.Op("Pad", {x, e.IntConst("pads", {0, 0, pad[0], pad[1], 0, 0, pad[0], pad[1]})}, "pad");
    pads = {0, 0, std::max<int64_t>(end[0] - pad[0], 0), std::max<int64_t>(end[1] - pad[1], 0)};
  }
  onnx::NodeProto* node = e.Node(max ? "MaxPool" : "AveragePool", {x});
  AddInts(node, "kernel_shape", kernel);
  AddInts(node, "strides", stride);
  AddInts(node, "pads", pads);
  if (!max) AddInt(node, "count_include_pad", 0);
  *tops = {node->output(0)};
  return "";
}

std::string BatchNorm(Emitter& e, Tops* tops) {
  const LayerIO& io = e.io();
  const BatchNormParameter& bp = io.param->batch_norm_param();
  if (bp.has_use_global_stats() && !bp.use_global_stats())
    return "use_global_stats: false normalises with each batch's own statistics, which ONNX's "
           "BatchNormalization (inference) does not";
  if (io.in_shapes[0].size() < 2) return "ONNX's BatchNormalization needs N x C x ... (2 axes or more)";
  const int64_t channels = io.in_shapes[0][1];
  const float factor = io.blobs[2].at(0);
  std::string mean, variance;
  if (factor == 1.0f) {
    mean = e.Init("mean", {channels}, io.blobs[0]);
    variance = e.Init("variance", {channels}, io.blobs[1]);
  } else if (factor == 0.0f) {  // Caffe's factor is then 0: mean and variance 0
    mean = e.Init("mean", {channels}, std::vector<float>(channels, 0.0f));
    variance = e.Init("variance", {channels}, std::vector<float>(channels, 0.0f));
  } else {
    // The raw blobs and the factor, so that an importer recovers them bit for bit. The factor is C
    // equal values, not one: OpenCV folds a Div of two constants only when their shapes are equal.
    const std::string raw_mean = e.Init("mean", {channels}, io.blobs[0]);
    const std::string raw_variance = e.Init("variance", {channels}, io.blobs[1]);
    const std::string s = e.Init("scale_factor", {channels}, std::vector<float>(channels, factor));
    mean = e.Op("Div", {raw_mean, s}, "mean_div");
    variance = e.Op("Div", {raw_variance, s}, "variance_div");
  }
  const bool scale_bias = io.blobs.size() >= 5;
  const std::string gamma = e.Init("scale", {channels}, scale_bias ? io.blobs[3] : std::vector<float>(channels, 1.0f));
  const std::string beta = e.Init("bias", {channels}, scale_bias ? io.blobs[4] : std::vector<float>(channels, 0.0f));
  onnx::NodeProto* node = e.Node("BatchNormalization", {io.in[0], gamma, beta, mean, variance});
  AddFloat(node, "epsilon", bp.eps());
  *tops = {node->output(0)};
  return "";
}

// Scale (Mul) and Bias (Add): the operand from a blob or the second bottom, shaped to broadcast at `axis`.
std::string ScaleOrBias(Emitter& e, Tops* tops, bool scale) {
  const LayerIO& io = e.io();
  const size_t rank = io.in_shapes[0].size();
  const int axis = Axis(scale ? io.param->scale_param().axis() : io.param->bias_param().axis(), rank);
  const bool from_bottom = io.in.size() > 1;
  const std::vector<int>& shape = from_bottom ? io.in_shapes[1] : io.blob_shapes[0];
  std::vector<int> broadcast = shape;
  broadcast.resize(rank - axis, 1);
  std::string operand;
  if (from_bottom) {
    operand = broadcast.size() == shape.size()
                  ? io.in[1]
                  : e.Reshape(io.in[1], broadcast, axis == 0 ? Batch::kCopy : Batch::kFixed, "operand");
  } else {
    operand = e.Init(scale ? "scale" : "bias", ToInts(broadcast), io.blobs[0]);
  }
  std::string y = e.Op(scale ? "Mul" : "Add", {io.in[0], operand}, "");
  if (scale && io.param->scale_param().bias_term()) {
    const size_t b = from_bottom ? 0 : 1;
    std::vector<int> bias_shape = io.blob_shapes[b];
    bias_shape.resize(rank - axis, 1);
    y = e.Op("Add", {y, e.Init("bias", ToInts(bias_shape), io.blobs[b])}, "bias");
  }
  *tops = {y};
  return "";
}

std::string Lrn(Emitter& e, Tops* tops) {
  const LayerIO& io = e.io();
  const LRNParameter& lp = io.param->lrn_param();
  const int64_t n = lp.local_size();
  if (lp.norm_region() == LRNParameter::ACROSS_CHANNELS) {
    onnx::NodeProto* node = e.Node("LRN", {io.in[0]});
    AddInt(node, "size", n);
    AddFloat(node, "alpha", lp.alpha());
    AddFloat(node, "beta", lp.beta());
    AddFloat(node, "bias", lp.k());
    *tops = {node->output(0)};
    return "";
  }
  if (io.in_shapes[0].size() != 4) return "WITHIN_CHANNEL LRN is exported for 4-D bottoms only";
  // y = x · (1 + alpha/n² · Σ_window x²)^(−beta): the window sum as an average over n × n of x²
  // padded with (n−1)/2 zeros (explicit, so that every runtime divides by n²).
  const std::string x = io.in[0];
  const int64_t p = (n - 1) / 2;
  const std::string square = e.Op("Mul", {x, x}, "square");
  const std::string padded = e.Op("Pad", {square, e.IntConst("pads", {0, 0, p, p, 0, 0, p, p})}, "pad");
  onnx::NodeProto* pool = e.Node("AveragePool", {padded}, "average");
  AddInts(pool, "kernel_shape", {n, n});
  AddInts(pool, "strides", {1, 1});
  std::string s = e.MulConst(pool->output(0), lp.alpha(), "alpha");
  s = e.AddConst(s, 1.0f, "shift");
  s = e.Op("Pow", {s, e.Const("minus_beta", -lp.beta())}, "power");
  *tops = {e.Op("Mul", {x, s})};
  return "";
}

std::string Eltwise(Emitter& e, Tops* tops) {
  const LayerIO& io = e.io();
  const EltwiseParameter& ep = io.param->eltwise_param();
  std::vector<std::string> in = io.in;
  std::string op = "Max";
  if (ep.operation() == EltwiseParameter::PROD) {
    std::string y = in[0];
    for (size_t k = 1; k < in.size(); ++k)
      y = e.Op("Mul", {y, in[k]}, k + 1 == in.size() ? "" : "mul_" + std::to_string(k));
    *tops = {y};
    return "";
  }
  if (ep.operation() == EltwiseParameter::SUM) {
    op = in.size() == 2 ? "Add" : "Sum";
    if (ep.coeff_size() > 0 && ep.coeff_size() != int(in.size()))
      return "it has " + std::to_string(ep.coeff_size()) + " coeffs for " + std::to_string(in.size()) + " bottoms";
    for (int k = 0; k < ep.coeff_size(); ++k) in[k] = e.MulConst(in[k], ep.coeff(k), "coeff_" + std::to_string(k));
  }
  *tops = {in.size() == 1 ? e.Op("Identity", in) : e.Op(op, in)};
  return "";
}

std::string Slice(Emitter& e, Tops* tops) {
  const LayerIO& io = e.io();
  const SliceParameter& sp = io.param->slice_param();
  const int axis = sp.has_slice_dim() ? int(sp.slice_dim()) : Axis(sp.axis(), io.in_shapes[0].size());
  if (io.out_shapes.size() == 1) {
    *tops = {io.in[0]};
    return "";
  }
  Ints sizes;
  for (const auto& shape : io.out_shapes) sizes.push_back(shape[axis]);
  onnx::NodeProto* node = e.Node("Split", {io.in[0], e.IntConst("split", sizes)}, "", int(sizes.size()));
  AddInt(node, "axis", axis);
  tops->assign(node->output().begin(), node->output().end());
  return "";
}

std::string Crop(Emitter& e, Tops* tops) {
  const LayerIO& io = e.io();
  const CropParameter& cp = io.param->crop_param();
  const size_t rank = io.in_shapes[0].size();
  const int axis = Axis(cp.axis(), rank);
  Ints starts, ends, axes;
  for (size_t a = axis; a < rank; ++a) {
    const int64_t offset = cp.offset_size() == 0 ? 0 : cp.offset_size() == 1 ? cp.offset(0) : cp.offset(a - axis);
    starts.push_back(offset);
    ends.push_back(offset + io.in_shapes[1][a]);
    axes.push_back(int64_t(a));
  }
  *tops = {e.Op("Slice", {io.in[0], e.IntConst("starts", starts), e.IntConst("ends", ends), e.IntConst("axes", axes)})};
  return "";
}

std::string Flatten(Emitter& e, Tops* tops) {
  const LayerIO& io = e.io();
  const FlattenParameter& fp = io.param->flatten_param();
  const size_t rank = io.in_shapes[0].size();
  const int axis = Axis(fp.axis(), rank), end = Axis(fp.end_axis(), rank);
  if (axis == 1 && end == int(rank) - 1) {
    onnx::NodeProto* node = e.Node("Flatten", {io.in[0]});
    AddInt(node, "axis", 1);
    *tops = {node->output(0)};
    return "";
  }
  *tops = {e.Reshape(io.in[0], io.out_shapes[0], axis >= 1 ? Batch::kCopy : Batch::kInfer, "")};
  return "";
}

std::string Reshape(Emitter& e, Tops* tops) {
  const LayerIO& io = e.io();
  const ReshapeParameter& rp = io.param->reshape_param();
  const int axis = Axis(rp.axis(), io.in_shapes[0].size() + 1);
  // Axis 0 is the bottom's batch when the reshape starts after it or copies it (dim 0: 0); when the
  // reshaped part infers a dim (−1) from the batch, that dim stays inferred.
  const bool keeps = axis > 0 || (rp.shape().dim_size() > 0 && rp.shape().dim(0) == 0);
  Batch batch = keeps ? Batch::kCopy : Batch::kFixed;
  std::vector<int> shape = io.out_shapes[0];
  int infer = -1;
  for (int k = 0; k < rp.shape().dim_size(); ++k)
    if (rp.shape().dim(k) == -1) infer = axis + k;
  if (!keeps && infer == 0) batch = Batch::kInfer;
  if (!keeps && infer > 0 && e.dynamic()) {  // the batch goes into the inferred dim
    Ints dims = ToInts(shape);
    dims[infer] = -1;
    *tops = {e.Op("Reshape", {io.in[0], e.IntConst("shape", dims)})};
    return "";
  }
  *tops = {e.Reshape(io.in[0], shape, batch, "")};
  return "";
}

std::string ArgMax(Emitter& e, Tops* tops) {
  const LayerIO& io = e.io();
  const ArgMaxParameter& ap = io.param->argmax_param();
  const int64_t k = ap.top_k();
  std::string x = io.in[0];
  int axis = 1;
  if (ap.has_axis()) {
    axis = Axis(ap.axis(), io.in_shapes[0].size());
  } else if (io.in_shapes[0].size() != 2) {
    onnx::NodeProto* flatten = e.Node("Flatten", {x}, "flatten");
    AddInt(flatten, "axis", 1);
    x = flatten->output(0);
  }
  std::string indices, values;
  const bool want_values = ap.out_max_val(), want_indices = !ap.has_axis() || !ap.out_max_val();
  if (k == 1) {
    if (want_indices) {
      onnx::NodeProto* node = e.Node("ArgMax", {x}, "argmax");
      AddInt(node, "axis", axis);
      AddInt(node, "keepdims", 1);
      AddInt(node, "select_last_index", 1);  // Caffe ranks equal values by the higher index
      indices = node->output(0);
    }
    if (want_values) {
      onnx::NodeProto* node = e.Node("ReduceMax", {x}, "max");
      AddInts(node, "axes", {axis});
      AddInt(node, "keepdims", 1);
      values = node->output(0);
    }
  } else {
    onnx::NodeProto* node = e.Node("TopK", {x, e.IntConst("k", {k})}, "topk", 2);
    AddInt(node, "axis", axis);
    values = node->output(0);
    indices = node->output(1);
  }
  if (want_indices) {
    onnx::NodeProto* cast = e.Node("Cast", {indices}, "cast");
    AddInt(cast, "to", onnx::TensorProto::FLOAT);
    indices = cast->output(0);
  }
  if (ap.has_axis()) {
    *tops = {want_values ? values : indices};
    return "";
  }
  std::string y = indices;
  if (want_values) {  // N x 2k: the k indices, then the k values
    onnx::NodeProto* concat = e.Node("Concat", {indices, values}, "concat");
    AddInt(concat, "axis", 1);
    y = concat->output(0);
  }
  *tops = {e.Reshape(y, io.out_shapes[0], Batch::kCopy, "")};
  return "";
}

// Element-wise layers of one bottom.
std::string Neuron(Emitter& e, Tops* tops) {
  const LayerIO& io = e.io();
  const LayerParameter& lp = *io.param;
  const std::string& type = io.type;
  const std::string x = io.in[0];
  std::string y;
  if (type == "ReLU") {
    if (lp.relu_param().negative_slope() == 0.0f) {
      y = e.Op("Relu", {x});
    } else {
      onnx::NodeProto* node = e.Node("LeakyRelu", {x});
      AddFloat(node, "alpha", lp.relu_param().negative_slope());
      y = node->output(0);
    }
  } else if (type == "Sigmoid") {
    y = e.Op("Sigmoid", {x});
  } else if (type == "TanH") {
    y = e.Op("Tanh", {x});
  } else if (type == "AbsVal") {
    y = e.Op("Abs", {x});
  } else if (type == "BNLL") {
    y = e.Op("Softplus", {x});
  } else if (type == "ELU") {
    onnx::NodeProto* node = e.Node("Elu", {x});
    AddFloat(node, "alpha", lp.elu_param().alpha());
    y = node->output(0);
  } else if (type == "Dropout") {
    y = x;  // Caffe scales at training time: TEST is the identity
  } else if (type == "PReLU") {
    const std::vector<int>& in = io.in_shapes[0];
    Ints dims = {int64_t(io.blobs[0].size())};
    if (!lp.prelu_param().channel_shared()) dims.resize(in.size() >= 2 ? in.size() - 1 : 1, 1);
    y = e.Op("PRelu", {x, e.Init("slope", dims, io.blobs[0])});
  } else if (type == "Swish") {
    const std::string scaled = e.MulConst(x, lp.swish_param().beta(), "beta");
    y = e.Op("Mul", {x, e.Op("Sigmoid", {scaled}, "sigmoid")});
  } else if (type == "Clip") {
    y = e.Op("Clip", {x, e.Const("min", lp.clip_param().min()), e.Const("max", lp.clip_param().max())});
  } else if (type == "Threshold") {
    const std::string above = e.Op("Greater", {x, e.Const("threshold", lp.threshold_param().threshold())}, "greater");
    onnx::NodeProto* cast = e.Node("Cast", {above});
    AddInt(cast, "to", onnx::TensorProto::FLOAT);
    y = cast->output(0);
  } else if (type == "Power") {  // (shift + scale · x)^power
    const PowerParameter& pp = lp.power_param();
    y = e.AddConst(e.MulConst(x, pp.scale(), "scale"), pp.shift(), "shift");
    if (pp.power() != 1.0f) y = e.Op("Pow", {y, e.Const("power", pp.power())});
  } else if (type == "Exp") {  // base^(shift + scale · x) = e^(ln base · (shift + scale · x))
    const ExpParameter& ep = lp.exp_param();
    const float log_base = ep.base() == -1.0f ? 1.0f : std::log(ep.base());
    y = e.Op("Exp", {e.AddConst(e.MulConst(x, ep.scale() * log_base, "scale"), ep.shift() * log_base, "shift")});
  } else if (type == "Log") {  // log_base(shift + scale · x) = ln(shift + scale · x) / ln base
    const LogParameter& lg = lp.log_param();
    y = e.Op("Log", {e.AddConst(e.MulConst(x, lg.scale(), "scale"), lg.shift(), "shift")}, "log");
    if (lg.base() != -1.0f) y = e.Op("Mul", {y, e.Const("inverse_log_base", 1.0f / std::log(lg.base()))});
  } else {
    LOG(FATAL) << "not a neuron layer: " << type;
  }
  *tops = {y};
  return "";
}

std::string Embed(Emitter& e, Tops* tops) {
  const LayerIO& io = e.io();
  const EmbedParameter& ep = io.param->embed_param();
  onnx::NodeProto* cast = e.Node("Cast", {io.in[0]}, "indices");
  AddInt(cast, "to", onnx::TensorProto::INT64);
  const int64_t outputs = ep.num_output();
  const std::string weight = e.Init("weight", {int64_t(io.blobs[0].size()) / outputs, outputs}, io.blobs[0]);
  onnx::NodeProto* gather = e.Node("Gather", {weight, cast->output(0)}, ep.bias_term() ? "gather" : "");
  AddInt(gather, "axis", 0);
  std::string y = gather->output(0);
  if (ep.bias_term()) y = e.Op("Add", {y, e.Init("bias", {outputs}, io.blobs[1])});
  *tops = {y};
  return "";
}

std::string Reduction(Emitter& e, Tops* tops) {
  const LayerIO& io = e.io();
  const ReductionParameter& rp = io.param->reduction_param();
  const size_t rank = io.in_shapes[0].size();
  Ints axes;
  for (size_t a = Axis(rp.axis(), rank); a < rank; ++a) axes.push_back(int64_t(a));
  std::string x = io.in[0];
  onnx::NodeProto* node = nullptr;
  const std::string what = rp.coeff() == 1.0f ? "" : "reduce";
  switch (rp.operation()) {
    case ReductionParameter::ASUM:
      x = e.Op("Abs", {x}, "abs");
      [[fallthrough]];
    case ReductionParameter::SUM:
      node = e.Node("ReduceSum", {x, e.IntConst("axes", axes)}, what);
      break;
    case ReductionParameter::SUMSQ:
      node = e.Node("ReduceSumSquare", {x}, what);
      AddInts(node, "axes", axes);
      break;
    case ReductionParameter::MEAN:
      node = e.Node("ReduceMean", {x}, what);
      AddInts(node, "axes", axes);
      break;
  }
  CHECK(node) << io.name;
  AddInt(node, "keepdims", 0);
  std::string y = node->output(0);
  if (rp.coeff() != 1.0f) y = e.Op("Mul", {y, e.Const("coeff", rp.coeff())});
  *tops = {y};
  return "";
}

std::string Mvn(Emitter& e, Tops* tops) {
  const LayerIO& io = e.io();
  const MVNParameter& mp = io.param->mvn_param();
  std::string x = io.in[0];
  if (io.in_shapes[0].size() != 4) x = e.Reshape(x, io.out_shapes[0], Batch::kCopy, "reshape");
  const Ints axes = mp.across_channels() ? Ints{1, 2, 3} : Ints{2, 3};
  onnx::NodeProto* mean = e.Node("ReduceMean", {x}, "mean");
  AddInts(mean, "axes", axes);
  AddInt(mean, "keepdims", 1);
  if (!mp.normalize_variance()) {
    *tops = {e.Op("Sub", {x, mean->output(0)})};
    return "";
  }
  // y = (x − mean) / (sqrt(mean((x − mean)²)) + eps), Caffe's eps outside the root.
  const std::string centred = e.Op("Sub", {x, mean->output(0)}, "centred");
  onnx::NodeProto* variance = e.Node("ReduceMean", {e.Op("Mul", {centred, centred}, "square")}, "variance");
  AddInts(variance, "axes", axes);
  AddInt(variance, "keepdims", 1);
  const std::string deviation = e.AddConst(e.Op("Sqrt", {variance->output(0)}, "std"), mp.eps(), "eps");
  *tops = {e.Op("Div", {centred, deviation})};
  return "";
}

std::string WithAxis(Emitter& e, Tops* tops, const std::string& op, int axis) {
  onnx::NodeProto* node = e.Node(op, e.io().in);
  AddInt(node, "axis", axis);
  *tops = {node->output(0)};
  return "";
}

const std::map<std::string, EmitFn>& Emitters() {
  static const std::map<std::string, EmitFn> kEmitters = [] {
    std::map<std::string, EmitFn> m;
    m["Convolution"] = [](Emitter& e, Tops* t) { return Convolution(e, t, false); };
    m["Deconvolution"] = [](Emitter& e, Tops* t) { return Convolution(e, t, true); };
    m["InnerProduct"] = InnerProduct;
    m["Pooling"] = Pooling;
    m["BatchNorm"] = BatchNorm;
    m["Scale"] = [](Emitter& e, Tops* t) { return ScaleOrBias(e, t, true); };
    m["Bias"] = [](Emitter& e, Tops* t) { return ScaleOrBias(e, t, false); };
    m["LRN"] = Lrn;
    m["Eltwise"] = Eltwise;
    m["Slice"] = Slice;
    m["Crop"] = Crop;
    m["Flatten"] = Flatten;
    m["Reshape"] = Reshape;
    m["ArgMax"] = ArgMax;
    m["Embed"] = Embed;
    m["Reduction"] = Reduction;
    m["MVN"] = Mvn;
    for (const char* type : {"ReLU", "Sigmoid", "TanH", "AbsVal", "BNLL", "ELU", "Dropout", "PReLU", "Swish", "Clip",
                             "Threshold", "Power", "Exp", "Log"})
      m[type] = Neuron;
    m["Softmax"] = [](Emitter& e, Tops* t) {
      return WithAxis(e, t, "Softmax", Axis(e.io().param->softmax_param().axis(), e.io().in_shapes[0].size()));
    };
    m["Concat"] = [](Emitter& e, Tops* t) {
      const ConcatParameter& cp = e.io().param->concat_param();
      const int axis = cp.has_concat_dim() ? int(cp.concat_dim()) : Axis(cp.axis(), e.io().in_shapes[0].size());
      return WithAxis(e, t, "Concat", axis);
    };
    m["Tile"] = [](Emitter& e, Tops* t) {
      const TileParameter& tp = e.io().param->tile_param();
      Ints repeats(e.io().in_shapes[0].size(), 1);
      repeats[Axis(tp.axis(), repeats.size())] = tp.tiles();
      *t = {e.Op("Tile", {e.io().in[0], e.IntConst("repeats", repeats)})};
      return std::string();
    };
    m["BatchReindex"] = [](Emitter& e, Tops* t) {
      onnx::NodeProto* cast = e.Node("Cast", {e.io().in[1]}, "indices");
      AddInt(cast, "to", onnx::TensorProto::INT64);
      onnx::NodeProto* gather = e.Node("Gather", {e.io().in[0], cast->output(0)});
      AddInt(gather, "axis", 0);
      *t = {gather->output(0)};
      return std::string();
    };
    return m;
  }();
  return kEmitters;
}

}  // namespace

std::string UnsupportedReason(const std::string& type) {
  if (Emitters().count(type)) return "";
  static const std::map<std::string, std::string> kWhy = {
      {"LSTM", "recurrent layers are not exported (ONNX's LSTM has another gate layout and sequence handling)"},
      {"RNN", "recurrent layers are not exported (ONNX's RNN has another sequence handling)"},
      {"LSTMUnit", "recurrent layers are not exported"},
      {"Python", "its computation is Python code, which ONNX cannot hold"},
      {"Im2col", "ONNX has no im2col operator"},
      {"SPP", "spatial pyramid pooling is not exported"},
      {"Filter", "its output's batch size depends on the data"},
      {"HDF5Output", "it writes a file; ONNX graphs have no side effects"},
  };
  auto it = kWhy.find(type);
  return it != kWhy.end() ? it->second : "no ONNX mapping for this layer type";
}

bool EmitLayer(GraphWriter& g, const LayerIO& io, std::vector<std::string>* tops, std::string* why) {
  auto it = Emitters().find(io.type);
  CHECK(it != Emitters().end()) << io.type;
  Emitter e(g, io);
  *why = it->second(e, tops);
  return why->empty();
}

}  // namespace onnx_export
}  // namespace cortado
