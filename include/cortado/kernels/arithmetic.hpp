// kernels/arithmetic.hpp — the element-wise arithmetic of math.hpp and math_gpu.hpp (cpu_scale and
// gpu_scale, cpu_add and gpu_add, …) as functors, once for both devices: math_cpu.cpp runs them with
// MapCpu and math_gpu.cu with MapGpu (kernels/for_each.hpp, instantiated for the GPU there), and
// layers use them directly.
#pragma once

#include "cortado/kernels/for_each.hpp"

namespace cortado::arithmetic {

struct Constant {  // y = value (no input)
  float value;
  CORTADO_HOST_DEVICE float operator()() const { return value; }
};
struct Scaled {  // y = factor · x
  float factor;
  CORTADO_HOST_DEVICE float operator()(float x) const { return factor * x; }
};
struct Axpby {  // y = alpha · x + beta · y
  float alpha, beta;
  CORTADO_HOST_DEVICE float operator()(float x, float y) const { return alpha * x + beta * y; }
};
struct PlusConstant {  // y = y + value
  float value;
  CORTADO_HOST_DEVICE float operator()(float y) const { return y + value; }
};
struct Sign {  // y = sign(x) ∈ {−1, 0, 1}
  CORTADO_HOST_DEVICE float operator()(float x) const { return static_cast<float>((0.0f < x) - (x < 0.0f)); }
};
struct Sum {
  CORTADO_HOST_DEVICE float operator()(float a, float b) const { return a + b; }
};
struct Difference {
  CORTADO_HOST_DEVICE float operator()(float a, float b) const { return a - b; }
};
struct Product {
  CORTADO_HOST_DEVICE float operator()(float a, float b) const { return a * b; }
};
struct Quotient {
  CORTADO_HOST_DEVICE float operator()(float a, float b) const { return a / b; }
};

}  // namespace cortado::arithmetic
