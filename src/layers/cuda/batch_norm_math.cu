// batch_norm_math.cu — the GPU side of batch_norm_math.hpp: its functors and sums instantiated for
// float storage.
#include "../batch_norm_math.hpp"
#include "cortado/cuda/for_each.cuh"

namespace cortado {

using namespace batch_norm;  // NOLINT: the functors of this layer

CORTADO_GPU_MAP(GlobalMean, float*, const float*);
CORTADO_GPU_MAP(GlobalStd, float*, const float*);
CORTADO_GPU_MAP_CHANNELS(Normalize, float*, const float*);
CORTADO_GPU_MAP_CHANNELS(batch_norm::Backward, float*, const float*, const float*);
CORTADO_GPU_MAP_CHANNELS(GlobalBackward, float*, const float*);
CORTADO_GPU_CHANNEL_SUMS(SumOfValues, StoreMean);
CORTADO_GPU_CHANNEL_SUMS(SumOfSquares, StoreStats);
CORTADO_GPU_CHANNEL_SUMS(SumOfDyAndDyX, StoreMeans);

}  // namespace cortado
