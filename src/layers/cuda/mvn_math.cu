// mvn_math.cu — the GPU side of mvn_math.hpp (MVN), instantiated for float storage; the row sums are
// ChannelSums over (1, rows, dim) (row_sums.hpp).
#include "../mvn_math.hpp"
#include "../row_sums.hpp"
#include "cortado/cuda/for_each.cuh"

namespace cortado {

using namespace mvn;  // NOLINT: the functors of this family

CORTADO_GPU_CHANNEL_SUMS(SumOfValues<float>, StoreMean);
CORTADO_GPU_MAP_CHANNELS(Center, float*, const float*);
CORTADO_GPU_CHANNEL_SUMS(SumOfSquares, StoreScale);
CORTADO_GPU_MAP_CHANNELS(Normalize, float*, const float*);
CORTADO_GPU_CHANNEL_SUMS(GradSums, StoreGradSums);
CORTADO_GPU_MAP_CHANNELS(NormalizedGrad, float*, const float*, const float*);
CORTADO_GPU_MAP_CHANNELS(CenteredGrad, float*, const float*);

}  // namespace cortado
