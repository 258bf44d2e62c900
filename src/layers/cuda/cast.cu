// cast.cu — the GPU side of cast_math.hpp: the conversion between every pair of storage types, in the
// same order and transposed between NCHW and NHWC, and the sums of a gradient of each type into floats.
#include "../cast_math.hpp"
#include "cortado/cuda/for_each.cuh"

namespace cortado {

using cast::SameValue;
using cast::Transpose;

// Name: the pair's Transpose (a template's comma cannot pass through the instantiating macro).
#define CORTADO_CAST_PAIR(Name, Out, In)        \
  using Name = Transpose<Out, In>;              \
  CORTADO_GPU_MAP(SameValue, Out*, const In*); \
  CORTADO_GPU_FOR_EACH(Name)

CORTADO_CAST_PAIR(FloatFromFloat, float, float);
CORTADO_CAST_PAIR(FloatFromBf16, float, BFloat16);
CORTADO_CAST_PAIR(FloatFromFp16, float, Float16);
CORTADO_CAST_PAIR(Bf16FromFloat, BFloat16, float);
CORTADO_CAST_PAIR(Bf16FromBf16, BFloat16, BFloat16);
CORTADO_CAST_PAIR(Bf16FromFp16, BFloat16, Float16);
CORTADO_CAST_PAIR(Fp16FromFloat, Float16, float);
CORTADO_CAST_PAIR(Fp16FromBf16, Float16, BFloat16);
CORTADO_CAST_PAIR(Fp16FromFp16, Float16, Float16);

// Gradients of each storage type added into float sums (AddValues).
CORTADO_GPU_FOR_EACH(cast::AddConverted<float>);
CORTADO_GPU_FOR_EACH(cast::AddConverted<BFloat16>);
CORTADO_GPU_FOR_EACH(cast::AddConverted<Float16>);

}  // namespace cortado
