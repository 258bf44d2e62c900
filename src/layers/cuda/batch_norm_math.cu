// batch_norm_math.cu — the GPU side of batch_norm_math.hpp: its functors and sums instantiated for
// float statistics, and for the activations' storage types float, bf16 and fp16 (the layer computes on
// 16-bit storage itself).
#include "../batch_norm_math.hpp"
#include "cortado/cuda/for_each.cuh"

namespace cortado {

using namespace batch_norm;  // NOLINT: the functors of this layer

CORTADO_GPU_MAP(GlobalMean, float*, const float*);
CORTADO_GPU_MAP(GlobalStd, float*, const float*);

// What BatchNorm runs over activations of storage type T.
#define CORTADO_BATCH_NORM_GPU(T)                                                     \
  CORTADO_GPU_MAP_CHANNELS(Normalize, T*, const T*);                                  \
  CORTADO_GPU_MAP_CHANNELS(batch_norm::Backward, T*, const T*, const T*);             \
  CORTADO_GPU_MAP_CHANNELS(GlobalBackward, T*, const T*);                             \
  CORTADO_GPU_CHANNEL_SUMS(SumOfValues<T>, StoreMean);                                \
  CORTADO_GPU_CHANNEL_SUMS(SumOfSquares<T>, StoreStats);                              \
  CORTADO_GPU_CHANNEL_SUMS(SumOfDyAndDyX<T>, StoreMeans)

CORTADO_BATCH_NORM_GPU(float);
CORTADO_BATCH_NORM_GPU(BFloat16);
CORTADO_BATCH_NORM_GPU(Float16);

}  // namespace cortado
