// batch_norm_chain_math.cu — the GPU side of batch_norm_chain_math.hpp: the fused BatchNorm chain's
// functors and sums instantiated for float storage (BatchNorm's own Normalize, GlobalMean and GlobalStd
// are instantiated in batch_norm_math.cu).
#include "../batch_norm_chain_math.hpp"
#include "cortado/cuda/for_each.cuh"

namespace cortado {

using namespace batch_norm_chain;  // NOLINT: the functors of this layer

CORTADO_GPU_CHANNEL_SUMS(SumAndSquares, StoreBatchStats);

#define CORTADO_BATCH_NORM_CHAIN_GPU(A)                                                                   \
  CORTADO_GPU_CHANNEL_SUMS(GradientSums<A>, StoreGradients);                                           \
  CORTADO_GPU_MAP_CHANNELS(ScaleShiftAct<A>, float*, const float*);                                    \
  CORTADO_GPU_MAP_CHANNELS(NormalizeScaleShiftAct<A>, float*, const float*);                           \
  CORTADO_GPU_MAP_CHANNELS(BatchBackward<A>, float*, const float*, const float*, const float*);        \
  CORTADO_GPU_MAP_CHANNELS(batch_norm_chain::GlobalBackward<A>, float*, const float*, const float*)

CORTADO_BATCH_NORM_CHAIN_GPU(Activation::kNone);
CORTADO_BATCH_NORM_CHAIN_GPU(Activation::kReLU);
CORTADO_BATCH_NORM_CHAIN_GPU(Activation::kSigmoid);

}  // namespace cortado
