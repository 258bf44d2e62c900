// dropout_math.cu — the GPU side of dropout_math.hpp (Dropout's mask), instantiated for float storage.
#include "../dropout_math.hpp"
#include "cortado/cuda/for_each.cuh"

namespace cortado {

CORTADO_GPU_FOR_EACH(dropout::Forward);

}  // namespace cortado
