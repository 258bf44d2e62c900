// batch_norm_chain_math.cu — the GPU side of batch_norm_chain_math.hpp: the fused BatchNorm chain's
// functors and sums instantiated for float storage (BatchNorm's own Normalize, GlobalMean and GlobalStd
// are instantiated in batch_norm_math.cu).
#include "../batch_norm_chain_math.hpp"
#include "cortado/cuda/for_each.cuh"

namespace cortado {

using namespace batch_norm_chain;  // NOLINT: the functors of this layer

CORTADO_GPU_CHANNEL_SUMS(SumAndSquares, StoreBatchStats);
CORTADO_GPU_CHANNEL_SUMS(GradientSums, StoreGradients);
CORTADO_GPU_MAP_CHANNELS(ScaleShiftAct, float*, const float*);
CORTADO_GPU_MAP_CHANNELS(NormalizeScaleShiftAct, float*, const float*);
CORTADO_GPU_MAP_CHANNELS(BatchBackward, float*, const float*, const float*, const float*);
CORTADO_GPU_MAP_CHANNELS(batch_norm_chain::GlobalBackward, float*, const float*, const float*);

}  // namespace cortado
