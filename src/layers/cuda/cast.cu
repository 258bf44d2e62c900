// cast.cu — the GPU side of cast_math.hpp: the conversion between every pair of storage types.
#include "../cast_math.hpp"
#include "cortado/cuda/for_each.cuh"

namespace cortado {

using cast::SameValue;

CORTADO_GPU_MAP(SameValue, float*, const float*);
CORTADO_GPU_MAP(SameValue, float*, const BFloat16*);
CORTADO_GPU_MAP(SameValue, float*, const Float16*);
CORTADO_GPU_MAP(SameValue, BFloat16*, const float*);
CORTADO_GPU_MAP(SameValue, BFloat16*, const BFloat16*);
CORTADO_GPU_MAP(SameValue, BFloat16*, const Float16*);
CORTADO_GPU_MAP(SameValue, Float16*, const float*);
CORTADO_GPU_MAP(SameValue, Float16*, const BFloat16*);
CORTADO_GPU_MAP(SameValue, Float16*, const Float16*);

}  // namespace cortado
