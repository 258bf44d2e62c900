// axis_operand.hpp — what Scale and Bias share: an operand (a learned blob, or a second bottom) that
// covers the bottom's axes [axis, axis + operand axes) and is broadcast over the others. A bottom x of
// shape outer × dim × inner then meets the operand's dim values (outer: the axes before, inner: after).
#pragma once

#include <string>
#include <vector>

#include "cortado/blob.hpp"
#include "cortado/error.hpp"

namespace cortado {

// The shape of a learned operand: x's axes from `axis` for num_axes axes (−1: to the last).
// `who` names the layer in errors.
inline std::vector<int> LearnedOperandShape(const std::string& who, const Blob& x, int axis_param, int num_axes) {
  const int axis = x.CanonicalAxisIndex(axis_param);
  CORTADO_REQUIRE(num_axes >= -1, who, ": num_axes must be -1 (all axes) or at least 0, got ", num_axes);
  CORTADO_REQUIRE(num_axes == -1 || axis + num_axes <= x.num_axes(), who, ": axis ", axis, " and num_axes ",
                  num_axes, " reach past the bottom's axes ", x.shape_string());
  const int end = num_axes == -1 ? x.num_axes() : axis + num_axes;
  return std::vector<int>(x.shape().begin() + axis, x.shape().begin() + end);
}

struct OperandSpan {
  int64_t outer = 1, dim = 1, inner = 1;
};

// Checks that `operand` matches x's axes from `axis` (a scalar operand: from axis 0) and gives the
// span; `what` names the operand in the error ("the bias").
inline OperandSpan SpanOfOperand(const std::string& who, const char* what, const Blob& x, const Blob& operand,
                                 int axis_param) {
  const int axis = operand.num_axes() == 0 ? 0 : x.CanonicalAxisIndex(axis_param);
  bool fits = axis + operand.num_axes() <= x.num_axes();
  for (int i = 0; fits && i < operand.num_axes(); ++i) fits = x.shape(axis + i) == operand.shape(i);
  CORTADO_REQUIRE(fits, who, ": ", what, " ", operand.shape_string(), " does not match the bottom ",
                  x.shape_string(), " from axis ", axis);
  return {x.count(0, axis), operand.count(), x.count(axis + operand.num_axes())};
}

}  // namespace cortado
