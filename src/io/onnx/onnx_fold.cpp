// onnx_fold.cpp — constant folding for the ONNX importer: Constant nodes, and the shape arithmetic
// exporters emit before a Reshape (Shape of a tensor whose inferred shape is known, Gather, Unsqueeze,
// Squeeze, Concat, Cast, Slice, Identity, Reshape, Flatten, ConstantOfShape, Range, and element-wise
// Add/Sub/Mul/Div/Min/Max/Neg with numpy broadcasting) on tensors whose values are known. A folded
// node's outputs become constants and it emits no layer.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "onnx_import.hpp"
#include "onnx_tensors.hpp"

namespace cortado {
namespace onnx_import {
namespace {

using onnx_tensors::FindAttribute;
using onnx_tensors::IntAttribute;
using onnx_tensors::IntsAttribute;

int64_t Product(const std::vector<int64_t>& dims, size_t begin = 0, size_t end = size_t(-1)) {
  int64_t p = 1;
  const size_t stop = std::min(end, dims.size());
  for (size_t k = begin; k < stop; ++k) p *= dims[k];
  return p;
}

// The values a folded constant of `dims` holds: a Refusal for a negative dim or more than a shape
// computation could want (2^25), checked before anything is allocated.
int64_t Count(const std::vector<int64_t>& dims) {
  constexpr int64_t kMaxValues = int64_t(1) << 25;
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) throw Refusal{"a folded constant would have the negative dimension " + std::to_string(d)};
    if (d > 0 && n > kMaxValues / d) throw Refusal{"a folded constant would hold more than 2^25 values"};
    n *= d;
  }
  if (n > kMaxValues) throw Refusal{"a folded constant would hold more than 2^25 values"};
  return n;
}

std::vector<int64_t> Strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (int k = int(dims.size()) - 2; k >= 0; --k) s[size_t(k)] = s[size_t(k) + 1] * dims[size_t(k) + 1];
  return s;
}

// A constant of `dims` whose element k is element pick(k) of `from`.
Constant Pick(const Constant& from, const std::vector<int64_t>& dims, const std::function<int64_t(int64_t)>& pick) {
  Constant out;
  out.dims = dims;
  out.integer = from.integer;
  const int64_t n = Count(dims);
  if (from.integer) {
    out.i.resize(size_t(n));
    for (int64_t k = 0; k < n; ++k) out.i[size_t(k)] = from.i[size_t(pick(k))];
  } else {
    out.f.resize(size_t(n));
    for (int64_t k = 0; k < n; ++k) out.f[size_t(k)] = from.f[size_t(pick(k))];
  }
  return out;
}

std::vector<int64_t> AxesOf(const Importer& im, const onnx::NodeProto& node, int input_index) {
  if (node.input_size() > input_index && !node.input(input_index).empty())
    return im.Const(node.input(input_index)).ints();
  return IntsAttribute(node, "axes");
}

Constant Broadcast(const Constant& a, const Constant& b, bool integer,
                   const std::function<double(double, double)>& op_double,
                   const std::function<float(float, float)>& op_float) {
  const size_t rank = std::max(a.dims.size(), b.dims.size());
  std::vector<int64_t> da(rank, 1), db(rank, 1), out_dims(rank);
  std::copy(a.dims.begin(), a.dims.end(), da.begin() + long(rank - a.dims.size()));
  std::copy(b.dims.begin(), b.dims.end(), db.begin() + long(rank - b.dims.size()));
  for (size_t k = 0; k < rank; ++k) {
    if (da[k] != db[k] && da[k] != 1 && db[k] != 1) throw Refusal{"the constants' shapes do not broadcast"};
    out_dims[k] = da[k] == 1 ? db[k] : da[k];  // a 0 against a 1 is 0, as numpy broadcasts
  }
  const auto sa = Strides(da), sb = Strides(db), so = Strides(out_dims);
  Constant out;
  out.dims = out_dims;
  out.integer = integer;
  const int64_t n = Count(out_dims);
  for (int64_t k = 0; k < n; ++k) {
    int64_t ia = 0, ib = 0, rest = k;
    for (size_t ax = 0; ax < rank; ++ax) {
      const int64_t idx = rest / so[ax];
      rest %= so[ax];
      if (da[ax] != 1) ia += idx * sa[ax];
      if (db[ax] != 1) ib += idx * sb[ax];
    }
    if (integer) out.i.push_back(ToInt64(op_double(a.at(ia), b.at(ib))));
    else out.f.push_back(op_float(float(a.at(ia)), float(b.at(ib))));
  }
  return out;
}

Constant FoldBinary(const std::string& op, const Constant& a, const Constant& b) {
  const bool integer = a.integer && b.integer;
  if (op == "Add") return Broadcast(a, b, integer, std::plus<double>(), std::plus<float>());
  if (op == "Sub") return Broadcast(a, b, integer, std::minus<double>(), std::minus<float>());
  if (op == "Mul") return Broadcast(a, b, integer, std::multiplies<double>(), std::multiplies<float>());
  if (op == "Min")
    return Broadcast(a, b, integer, [](double x, double y) { return std::min(x, y); },
                     [](float x, float y) { return std::min(x, y); });
  if (op == "Max")
    return Broadcast(a, b, integer, [](double x, double y) { return std::max(x, y); },
                     [](float x, float y) { return std::max(x, y); });
  return Broadcast(
      a, b, integer,
      [](double x, double y) {
        if (y == 0) throw Refusal{"integer division by zero in a constant"};
        return std::trunc(x / y);
      },
      std::divides<float>());
}

Constant FoldSlice(const Importer& im, const onnx::NodeProto& node, const Constant& data) {
  std::vector<int64_t> starts, ends, axes, steps;
  if (im.opset < 10) {
    starts = IntsAttribute(node, "starts");
    ends = IntsAttribute(node, "ends");
    axes = IntsAttribute(node, "axes");
  } else {
    starts = im.Const(node.input(1)).ints();
    ends = im.Const(node.input(2)).ints();
    if (node.input_size() > 3 && !node.input(3).empty()) axes = im.Const(node.input(3)).ints();
    if (node.input_size() > 4 && !node.input(4).empty()) steps = im.Const(node.input(4)).ints();
  }
  const int64_t rank = int64_t(data.dims.size());
  if (axes.empty())
    for (size_t k = 0; k < starts.size(); ++k) axes.push_back(int64_t(k));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    throw Refusal{"Slice's starts, ends, axes and steps differ in length"};
  std::vector<int64_t> begin(size_t(rank), 0), step(size_t(rank), 1), out_dims = data.dims;
  for (size_t k = 0; k < axes.size(); ++k) {
    const size_t ax = size_t(NormalizeAxis(axes[k], rank));
    const int64_t dim = data.dims[ax], s = steps[k];
    if (s == 0) throw Refusal{"Slice step 0"};
    int64_t b = starts[k] < 0 ? starts[k] + dim : starts[k];
    int64_t e = ends[k] < 0 ? ends[k] + dim : ends[k];
    if (s > 0) {
      b = std::clamp<int64_t>(b, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      out_dims[ax] = e > b ? (e - b + s - 1) / s : 0;
    } else {
      b = std::clamp<int64_t>(b, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      out_dims[ax] = b > e ? (b - e - s - 1) / -s : 0;
    }
    begin[ax] = b;
    step[ax] = s;
  }
  const auto in_strides = Strides(data.dims), out_strides = Strides(out_dims);
  return Pick(data, out_dims, [&](int64_t k) {
    int64_t from = 0;
    for (size_t ax = 0; ax < out_dims.size(); ++ax) {
      const int64_t idx = k / out_strides[ax];
      k %= out_strides[ax];
      from += (begin[ax] + idx * step[ax]) * in_strides[ax];
    }
    return from;
  });
}

Constant FoldGather(const onnx::NodeProto& node, const Constant& data, const Constant& indices) {
  const int64_t rank = int64_t(data.dims.size());
  const size_t axis = size_t(NormalizeAxis(IntAttribute(node, "axis", 0), rank));
  const int64_t dim = data.dims[axis], inner = Product(data.dims, axis + 1);
  std::vector<int64_t> idx = indices.ints();
  for (auto& v : idx) {
    if (v < 0) v += dim;
    if (v < 0 || v >= dim) throw Refusal{"a Gather index is out of range"};
  }
  std::vector<int64_t> out_dims(data.dims.begin(), data.dims.begin() + long(axis));
  out_dims.insert(out_dims.end(), indices.dims.begin(), indices.dims.end());
  out_dims.insert(out_dims.end(), data.dims.begin() + long(axis) + 1, data.dims.end());
  const int64_t n = int64_t(idx.size());
  return Pick(data, out_dims, [&](int64_t k) {
    const int64_t o = k / (n * inner), j = (k / inner) % n, r = k % inner;
    return (o * dim + idx[size_t(j)]) * inner + r;
  });
}

std::vector<int64_t> ReshapeDims(const std::vector<int64_t>& in_dims, const std::vector<int64_t>& shape,
                                 bool allow_zero) {
  std::vector<int64_t> out = shape;
  int64_t known = 1, infer = -1;
  for (size_t k = 0; k < out.size(); ++k) {
    if (out[k] == 0 && !allow_zero) {
      if (k >= in_dims.size()) throw Refusal{"Reshape copies an axis the input does not have"};
      out[k] = in_dims[k];
    }
    if (out[k] < -1) throw Refusal{"Reshape asks for the dimension " + std::to_string(out[k])};
    if (out[k] == -1) {
      if (infer >= 0) throw Refusal{"Reshape has two -1 axes"};
      infer = int64_t(k);
    } else {
      Count({known, out[k]});  // no overflow
      known *= out[k];
    }
  }
  if (infer >= 0) {
    if (known == 0 || Product(in_dims) % known) throw Refusal{"Reshape's -1 axis does not divide the size"};
    out[size_t(infer)] = Product(in_dims) / known;
  }
  if (Product(out) != Product(in_dims)) throw Refusal{"Reshape changes the number of elements"};
  return out;
}

Constant Reshaped(Constant c, std::vector<int64_t> dims) {
  c.dims = std::move(dims);
  return c;
}

Constant FoldConstantNode(const onnx::NodeProto& node, const std::string& what) {
  for (const auto& a : node.attribute()) {
    Constant c;
    if (a.name() == "value") return FromTensor(a.t(), what);
    if (a.name() == "value_float") {
      c.f = {a.f()};
    } else if (a.name() == "value_floats") {
      c.f.assign(a.floats().begin(), a.floats().end());
      c.dims = {int64_t(c.f.size())};
    } else if (a.name() == "value_int") {
      c.integer = true;
      c.i = {a.i()};
    } else if (a.name() == "value_ints") {
      c.integer = true;
      c.i.assign(a.ints().begin(), a.ints().end());
      c.dims = {int64_t(c.i.size())};
    } else {
      continue;
    }
    return c;
  }
  throw Refusal{"a Constant of a kind Cortado does not read (sparse or string)"};
}

bool AllInputsConstant(const Importer& im, const onnx::NodeProto& node) {
  for (const auto& in : node.input())
    if (!in.empty() && !im.IsConstant(in)) return false;
  return true;
}

}  // namespace

bool FoldNode(Importer& im, const onnx::NodeProto& node) {
  const std::string& op = node.op_type();
  const std::string what = im.source + ": node '" + node.name() + "'";
  if (node.output_size() < 1) return false;
  const std::string& out = node.output(0);
  if (op == "Constant") {
    im.constants[out] = FoldConstantNode(node, what);
    return true;
  }
  if (op == "Shape") {
    if (!im.KnownShape(node.input(0))) return false;
    std::vector<int64_t> dims = im.Shape(node.input(0));
    const int64_t rank = int64_t(dims.size());
    int64_t start = IntAttribute(node, "start", 0), end = IntAttribute(node, "end", rank);
    if (start < 0) start += rank;
    if (end < 0) end += rank;
    start = std::clamp<int64_t>(start, 0, rank);
    end = std::clamp<int64_t>(end, start, rank);
    Constant c;
    c.integer = true;
    c.i.assign(dims.begin() + start, dims.begin() + end);
    c.dims = {int64_t(c.i.size())};
    im.constants[out] = c;
    return true;
  }
  if (op == "Size" && im.KnownShape(node.input(0))) {
    Constant c;
    c.integer = true;
    c.i = {Product(im.Shape(node.input(0)))};
    im.constants[out] = c;
    return true;
  }
  static const std::set<std::string> foldable = {
      "Identity", "Gather", "Unsqueeze", "Squeeze", "Concat", "Cast", "Slice", "Reshape", "Flatten",
      "ConstantOfShape", "Range", "Add", "Sub", "Mul", "Div", "Min", "Max", "Neg", "Floor", "Ceil", "Sqrt",
      "Equal", "Where", "Expand", "Dropout"};
  if (!foldable.count(op) || !AllInputsConstant(im, node)) return false;
  const Constant& x = im.Const(node.input(0));
  const int64_t rank = int64_t(x.dims.size());
  Constant result;
  if (op == "Identity" || op == "Dropout") {
    result = x;
  } else if (op == "Gather") {
    result = FoldGather(node, x, im.Const(node.input(1)));
  } else if (op == "Unsqueeze") {
    std::vector<int64_t> axes = AxesOf(im, node, 1);
    const int64_t out_rank = rank + int64_t(axes.size());
    for (auto& a : axes) a = NormalizeAxis(a, out_rank);
    std::sort(axes.begin(), axes.end());
    std::vector<int64_t> dims = x.dims;
    for (int64_t a : axes) {
      if (a > int64_t(dims.size())) throw Refusal{"Unsqueeze's axes leave a gap"};
      dims.insert(dims.begin() + a, 1);
    }
    result = Reshaped(x, dims);
  } else if (op == "Squeeze") {
    std::vector<int64_t> axes = AxesOf(im, node, 1);
    std::set<int64_t> drop;
    for (int64_t a : axes) drop.insert(NormalizeAxis(a, rank));
    std::vector<int64_t> dims;
    for (int64_t k = 0; k < rank; ++k)
      if (axes.empty() ? x.dims[size_t(k)] != 1 : !drop.count(k)) dims.push_back(x.dims[size_t(k)]);
    result = Reshaped(x, dims);
  } else if (op == "Concat") {
    const size_t axis = size_t(NormalizeAxis(IntAttribute(node, "axis", 0), rank));
    std::vector<const Constant*> parts;
    bool integer = true;
    for (const auto& in : node.input()) {
      parts.push_back(&im.Const(in));
      integer = integer && parts.back()->integer;
      const std::vector<int64_t>& dims = parts.back()->dims;
      if (dims.size() != x.dims.size()) throw Refusal{"Concat's inputs differ in rank"};
      for (size_t k = 0; k < dims.size(); ++k)
        if (k != axis && dims[k] != x.dims[k]) throw Refusal{"Concat's inputs differ off the axis"};
    }
    result.integer = integer;
    result.dims = x.dims;
    result.dims[axis] = 0;
    for (const Constant* p : parts) result.dims[axis] += p->dims[axis];
    Count(result.dims);
    const int64_t outer = Product(x.dims, 0, axis);
    for (int64_t o = 0; o < outer; ++o)
      for (const Constant* p : parts) {
        const int64_t block = Product(p->dims, axis);
        for (int64_t k = o * block; k < (o + 1) * block; ++k) {
          if (integer) result.i.push_back(p->i[size_t(k)]);
          else result.f.push_back(float(p->at(k)));
        }
      }
  } else if (op == "Cast") {
    const int64_t to = IntAttribute(node, "to", onnx::TensorProto::FLOAT);
    const bool to_float = to == onnx::TensorProto::FLOAT || to == onnx::TensorProto::DOUBLE ||
                          to == onnx::TensorProto::FLOAT16;
    result.dims = x.dims;
    result.integer = !to_float;
    if (to_float) result.f = x.floats();
    else for (int64_t k = 0; k < x.count(); ++k) result.i.push_back(to == onnx::TensorProto::BOOL ? x.at(k) != 0 : ToInt64(x.at(k)));
  } else if (op == "Slice") {
    result = FoldSlice(im, node, x);
  } else if (op == "Reshape") {
    result = Reshaped(x, ReshapeDims(x.dims, im.Const(node.input(1)).ints(), IntAttribute(node, "allowzero", 0)));
  } else if (op == "Flatten") {
    const int64_t axis = IntAttribute(node, "axis", 1);
    if (axis < -rank || axis > rank) throw Refusal{"Flatten's axis is outside the input's rank"};
    const size_t a = size_t(axis < 0 ? axis + rank : axis);
    result = Reshaped(x, {Product(x.dims, 0, a), Product(x.dims, a)});
  } else if (op == "Expand") {
    Constant ones;
    ones.dims = im.Const(node.input(1)).ints();
    ones.integer = true;
    ones.i.assign(size_t(Count(ones.dims)), 1);
    result = FoldBinary("Mul", x, ones);
  } else if (op == "ConstantOfShape") {
    result.dims = x.ints();
    Constant value;
    value.f = {0.0f};
    if (const auto* a = FindAttribute(node, "value")) value = FromTensor(a->t(), what);
    if (value.count() != 1) throw Refusal{"ConstantOfShape's value is not one value"};
    result.integer = value.integer;
    const int64_t n = Count(result.dims);
    if (value.integer) result.i.assign(size_t(n), value.i[0]);
    else result.f.assign(size_t(n), value.f[0]);
  } else if (op == "Range") {
    if (x.count() != 1 || im.Const(node.input(1)).count() != 1 || im.Const(node.input(2)).count() != 1)
      throw Refusal{"Range's start, limit and delta are not one value each"};
    const double start = x.at(0), limit = im.Const(node.input(1)).at(0), delta = im.Const(node.input(2)).at(0);
    if (delta == 0) throw Refusal{"Range with delta 0"};
    const int64_t n = std::max<int64_t>(ToInt64(std::ceil((limit - start) / delta)), 0);
    Count({n});
    result.integer = x.integer;
    result.dims = {n};
    for (int64_t k = 0; k < n; ++k) {
      if (x.integer) result.i.push_back(ToInt64(start + double(k) * delta));
      else result.f.push_back(float(start) + float(k) * float(delta));
    }
  } else if (op == "Neg" || op == "Floor" || op == "Ceil" || op == "Sqrt") {
    result = x;
    for (int64_t k = 0; k < x.count(); ++k) {
      const double v = x.at(k);
      const double r = op == "Neg" ? -v : op == "Floor" ? std::floor(v) : op == "Ceil" ? std::ceil(v) : std::sqrt(v);
      if (x.integer) result.i[size_t(k)] = ToInt64(r);
      else result.f[size_t(k)] = op == "Sqrt" ? std::sqrt(x.f[size_t(k)]) : float(r);
    }
  } else if (op == "Equal") {
    result = Broadcast(x, im.Const(node.input(1)), true, [](double a, double b) { return double(a == b); },
                       [](float a, float b) { return float(a == b); });
  } else if (op == "Where") {
    const Constant& a = im.Const(node.input(1));
    const Constant& b = im.Const(node.input(2));
    if (x.dims != a.dims || a.dims != b.dims) return false;
    result = a;
    for (int64_t k = 0; k < x.count(); ++k)
      if (x.at(k) == 0) {
        if (a.integer) result.i[size_t(k)] = ToInt64(b.at(k));
        else result.f[size_t(k)] = float(b.at(k));
      }
  } else {
    result = FoldBinary(op, x, im.Const(node.input(1)));
  }
  if (result.count() > im.fold_budget) throw Refusal{"its constants fold into more values than the model's weights justify"};
  im.fold_budget -= result.count();
  im.constants[out] = std::move(result);
  return true;
}

}  // namespace onnx_import
}  // namespace cortado
