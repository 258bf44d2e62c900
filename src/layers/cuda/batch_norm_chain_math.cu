// batch_norm_chain_math.cu — the GPU side of batch_norm_chain_math.hpp: the fused BatchNorm chain's
// functors and sums instantiated for each activation and for the activations' storage types float, bf16
// and fp16 (float statistics, γ and β; BatchNorm's own Normalize, GlobalMean and GlobalStd are
// instantiated in batch_norm_math.cu, for the same types).
#include "../batch_norm_chain_math.hpp"
#include "cortado/cuda/for_each.cuh"

namespace cortado {

using namespace batch_norm_chain;  // NOLINT: the functors of this layer

// What a chain ending in activation A runs over storage type T. (GradientSums<A, T>'s instantiation is
// written out: its two template arguments would split CORTADO_GPU_CHANNEL_SUMS's.)
#define CORTADO_BATCH_NORM_CHAIN_ACT_GPU(A, T)                                                        \
  template void ChannelSumsGpu(Context&, ChannelLayout, float*, const GradientSums<A, T>&,            \
                               const StoreGradients&);                                                \
  CORTADO_GPU_MAP_CHANNELS(ScaleShiftAct<A>, T*, const T*);                                           \
  CORTADO_GPU_MAP_CHANNELS(NormalizeScaleShiftAct<A>, T*, const T*);                                  \
  CORTADO_GPU_MAP_CHANNELS(BatchBackward<A>, T*, const T*, const T*, const T*);                       \
  CORTADO_GPU_MAP_CHANNELS(batch_norm_chain::GlobalBackward<A>, T*, const T*, const T*)

// Every chain over storage type T.
#define CORTADO_BATCH_NORM_CHAIN_GPU(T)                          \
  CORTADO_GPU_CHANNEL_SUMS(SumAndSquares<T>, StoreBatchStats);   \
  CORTADO_BATCH_NORM_CHAIN_ACT_GPU(Activation::kNone, T);        \
  CORTADO_BATCH_NORM_CHAIN_ACT_GPU(Activation::kReLU, T);        \
  CORTADO_BATCH_NORM_CHAIN_ACT_GPU(Activation::kSigmoid, T)

CORTADO_BATCH_NORM_CHAIN_GPU(float);
CORTADO_BATCH_NORM_CHAIN_GPU(BFloat16);
CORTADO_BATCH_NORM_CHAIN_GPU(Float16);

}  // namespace cortado
