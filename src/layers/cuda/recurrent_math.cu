// recurrent_math.cu — the GPU side of recurrent_math.hpp (LSTMUnit, RNN, LSTM), instantiated for float
// storage.
#include "../recurrent_math.hpp"
#include "cortado/cuda/for_each.cuh"

namespace cortado {

using namespace recurrent;  // NOLINT: the functors of this family

CORTADO_GPU_FOR_EACH(LstmUnitForwardStep);
CORTADO_GPU_FOR_EACH(LstmUnitBackwardStep);
CORTADO_GPU_MAP_CHANNELS(ScaleRow, float*, const float*);
CORTADO_GPU_MAP_CHANNELS(ScaleRowAdd, float*, const float*, const float*);
CORTADO_GPU_FOR_EACH(AddBroadcastStep);

}  // namespace cortado
