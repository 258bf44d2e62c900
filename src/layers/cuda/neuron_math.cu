// neuron_math.cu — the GPU side of neuron_math.hpp: each functor instantiated for float storage (those
// of kernels/arithmetic.hpp are instantiated in math_gpu.cu), and
// PReLU's slope gradient, a chunked channel sum in double in a fixed order (cuda/channel_sums.cuh; no
// atomics, so the same inputs give the same gradient), a shared slope summing the bottom as one channel.
#include "../neuron_math.hpp"
#include "cortado/cuda/channel_sums.cuh"  // cuda::QueueChannelSums
#include "cortado/cuda/for_each.cuh"

namespace cortado {

using namespace neuron;  // NOLINT: the functors of this family

CORTADO_GPU_MAP_STORED_1(ReLUForward);
CORTADO_GPU_MAP_STORED_2(ReLUBackward);
CORTADO_GPU_MAP_STORED_1(SigmoidForward);
CORTADO_GPU_MAP_STORED_2(SigmoidBackward);
CORTADO_GPU_MAP_STORED_1(TanHForward);
CORTADO_GPU_MAP_STORED_2(TanHBackward);
CORTADO_GPU_MAP(AbsValForward, float*, const float*);
CORTADO_GPU_MAP(AbsValBackward, float*, const float*, const float*);
CORTADO_GPU_MAP(BNLLForward, float*, const float*);
CORTADO_GPU_MAP(BNLLBackward, float*, const float*, const float*);
CORTADO_GPU_MAP(PowerForward, float*, const float*);
CORTADO_GPU_MAP(PowerBackward, float*, const float*, const float*);
CORTADO_GPU_MAP(ExpForward, float*, const float*);
CORTADO_GPU_MAP(ExpBackward, float*, const float*, const float*);
CORTADO_GPU_MAP(LogForward, float*, const float*);
CORTADO_GPU_MAP(LogBackward, float*, const float*, const float*);
CORTADO_GPU_MAP(ThresholdForward, float*, const float*);
CORTADO_GPU_MAP(ClipForward, float*, const float*);
CORTADO_GPU_MAP(ClipBackward, float*, const float*, const float*);
CORTADO_GPU_MAP(ELUForward, float*, const float*);
CORTADO_GPU_MAP(ELUBackward, float*, const float*, const float*, const float*);
CORTADO_GPU_MAP(SwishSigmoid, float*, const float*);
CORTADO_GPU_MAP(SwishBackward, float*, const float*, const float*, const float*);
CORTADO_GPU_MAP_CHANNELS(PReLUForward, float*, const float*);
CORTADO_GPU_MAP_CHANNELS(PReLUBackward, float*, const float*, const float*);

namespace {

struct AddSlopeDiff {  // slope_diff[c] += Σ
  float* slope_diff;
  __device__ void operator()(int64_t c, const double* total) const {
    slope_diff[c] = static_cast<float>(slope_diff[c] + total[0]);
  }
};

}  // namespace

void neuron::PReLUSlopeGradGpu(Context& ctx, ChannelLayout l, bool shared, const float* x, const float* dy,
                               float* scratch, float* slope_diff) {
  if (shared) {  // the bottom as one channel of all its values
    cuda::QueueChannelSums(ctx, 1, 1, l.count(), scratch, PReLUSlopeTerm{x, dy}, AddSlopeDiff{slope_diff});
  } else {
    cuda::QueueChannelSums(ctx, l.num, l.channels, l.spatial, scratch, PReLUSlopeTerm{x, dy},
                           AddSlopeDiff{slope_diff});
  }
}

}  // namespace cortado
