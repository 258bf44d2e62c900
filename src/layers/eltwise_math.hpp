// eltwise_math.hpp — Eltwise's own arithmetic, once for both devices (kernels/for_each.hpp); its
// products, quotients and scalings are kernels/arithmetic.hpp's functors. eltwise.cpp runs them;
// cuda/eltwise_math.cu instantiates these for the GPU.
//   SUM's accumulation: y = y + c_k·x_k (Map).
//   MAX's step for bottom k: where x > y (strict, so ties keep the earlier bottom), y = x and mask = k
//     (ForEach: two outputs per element); its gradient: dx_k = mask == k ? dy : 0 (Map).
#pragma once

#include <cstdint>

#include "cortado/kernels/for_each.hpp"

namespace cortado::eltwise {

struct AddScaled {  // y + coeff · x
  float coeff;
  CORTADO_HOST_DEVICE float operator()(float x, float y) const { return y + coeff * x; }
};

struct MaxStep {  // element i: the running maximum y and the winner's index in mask
  float k;
  const float* x;
  float* y;
  float* mask;
  CORTADO_HOST_DEVICE void operator()(int64_t i) const {
    if (x[i] > y[i]) {
      y[i] = x[i];
      mask[i] = k;
    }
  }
};

struct MaxBackward {  // dx = mask == k ? dy : 0
  float k;
  CORTADO_HOST_DEVICE float operator()(float mask, float dy) const { return mask == k ? dy : 0.0f; }
};

}  // namespace cortado::eltwise
