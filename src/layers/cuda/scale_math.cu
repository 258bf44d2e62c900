// scale_math.cu — the GPU side of scale_math.hpp (Scale and Bias), instantiated for float storage.
#include "../scale_math.hpp"
#include "cortado/cuda/for_each.cuh"

namespace cortado {

CORTADO_GPU_MAP_CHANNELS(scale::ScaleBias, float*, const float*);
CORTADO_GPU_CHANNEL_SUMS(scale::SumOfProducts, scale::StoreSum);

}  // namespace cortado
