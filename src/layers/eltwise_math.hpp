// eltwise_math.hpp — Eltwise's own arithmetic, once for both devices (kernels/for_each.hpp); its
// products, quotients and scalings are kernels/arithmetic.hpp's functors. eltwise.cpp runs them;
// cuda/eltwise_math.cu instantiates these for the GPU.
//   SUM's accumulation: y = y + c_k·x_k (Map).
//   MAX's step for bottom k: where x > y (strict, so ties keep the earlier bottom), y = x and mask = k
//     (ForEach: two outputs per element); its gradient: dx_k = mask == k ? dy : 0 (Map).
//   SUM of two bottoms fused with a ReLU in place on the sum (eltwise_relu.cpp):
//     y = relu(c_0·x_0 + c_1·x_1) and dx_k = c_k·dy where y > 0, else c_k·slope·dy (Map).
#pragma once

#include <cstdint>

#include "cortado/kernels/for_each.hpp"
#include "neuron_math.hpp"  // ReLU's forward and backward

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

struct SumReLU {  // relu(c0·x0 + c1·x1), slope ≥ 0 for x < 0
  float c0, c1, slope;
  CORTADO_HOST_DEVICE float operator()(float x0, float x1) const {
    return neuron::ReLUForward{slope}(c0 * x0 + c1 * x1);
  }
};
struct SumReLUBackward {  // c · (ReLU's dx from y and dy)
  float coeff, slope;
  CORTADO_HOST_DEVICE float operator()(float y, float dy) const { return coeff * neuron::ReLUBackward{slope}(y, dy); }
};

}  // namespace cortado::eltwise
