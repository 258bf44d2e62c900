// eltwise_math.cu — the GPU side of eltwise_math.hpp (Eltwise), instantiated for float storage (the
// kernels/arithmetic.hpp functors it also runs are instantiated in math_gpu.cu).
#include "../eltwise_math.hpp"
#include "cortado/cuda/for_each.cuh"

namespace cortado {

using namespace eltwise;  // NOLINT: the functors of this family

CORTADO_GPU_MAP_STORED_2(AddScaled);
CORTADO_GPU_FOR_EACH(MaxStep);
CORTADO_GPU_MAP(MaxBackward, float*, const float*, const float*);
CORTADO_GPU_MAP_STORED_2(SumReLU);
CORTADO_GPU_MAP_STORED_2(SumReLUBackward);

}  // namespace cortado
