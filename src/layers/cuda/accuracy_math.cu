// accuracy_math.cu — the GPU side of accuracy_math.hpp (Accuracy): the hit count's Total and the
// per-class rates' ForEach.
#include "../accuracy_math.hpp"
#include "cortado/cuda/for_each.cuh"

namespace cortado {

CORTADO_GPU_TOTAL(accuracy::Count, accuracy::StoreAccuracy);
CORTADO_GPU_FOR_EACH(accuracy::PerClass);

}  // namespace cortado
