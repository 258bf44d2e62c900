// shape_ops_math.cu — the GPU side of shape_ops_math.hpp (Crop, Tile, Reduction, ArgMax), instantiated
// for float storage; Reduction's row sums are ChannelSums over (1, rows, dim) (row_sums.hpp).
#include "../row_sums.hpp"
#include "../shape_ops_math.hpp"
#include "cortado/cuda/for_each.cuh"

namespace cortado {

using namespace shape_ops;  // NOLINT: the functors of this family

CORTADO_GPU_FOR_EACH(CropCopy);
CORTADO_GPU_FOR_EACH(TileForward);
CORTADO_GPU_FOR_EACH(TileBackward);
CORTADO_GPU_CHANNEL_SUMS(ReductionTerm, StoreReduction);
CORTADO_GPU_MAP_CHANNELS(ReductionBackward, float*, const float*);
CORTADO_GPU_MAP_CHANNELS(ReductionBackwardConstant, float*);
CORTADO_GPU_FOR_EACH(ArgMaxSearch);

}  // namespace cortado
