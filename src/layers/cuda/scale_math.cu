// scale_math.cu — the GPU side of scale_math.hpp (Scale, Bias, and the convolutions' bias), instantiated
// for float, bf16 and fp16 storage of x, y and their gradients (γ, β and the sums' results float).
#include "../scale_math.hpp"
#include "cortado/cuda/for_each.cuh"

namespace cortado {

#define CORTADO_SCALE_GPU(T)                                         \
  CORTADO_GPU_MAP_CHANNELS(scale::ScaleBias, T*, const T*);          \
  CORTADO_GPU_CHANNEL_SUMS(scale::SumOfProducts<T>, scale::StoreSum)

CORTADO_SCALE_GPU(float);
CORTADO_SCALE_GPU(BFloat16);
CORTADO_SCALE_GPU(Float16);

}  // namespace cortado
