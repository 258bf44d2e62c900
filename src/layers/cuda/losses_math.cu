// losses_math.cu — the GPU side of losses_math.hpp (SigmoidCrossEntropyLoss, ContrastiveLoss,
// HingeLoss, MultinomialLogisticLoss, EuclideanLoss): each functor instantiated once. The loss sums
// are Total's (cuda/for_each.cuh: block sums added in a fixed order, so the same inputs give the same
// loss); loss::ClearFlag is instantiated in loss_math.cu.
#include "../losses_math.hpp"
#include "cortado/cuda/for_each.cuh"

namespace cortado {

using namespace loss;  // NOLINT: the functors of this family

CORTADO_GPU_TOTAL(SigmoidCrossEntropyTerm, StoreLoss);
CORTADO_GPU_MAP(SigmoidCrossEntropyBackward, float*, const float*, const float*);
CORTADO_GPU_TOTAL(ContrastiveTerm, StoreLoss);
CORTADO_GPU_MAP_CHANNELS(ContrastiveBackward, float*, const float*, const float*);
CORTADO_GPU_TOTAL(HingeTerm, StoreLoss);
CORTADO_GPU_FOR_EACH(HingeBackward);
CORTADO_GPU_TOTAL(MultinomialLogisticTerm, StoreLoss);
CORTADO_GPU_FOR_EACH(MultinomialLogisticBackward);
CORTADO_GPU_TOTAL(EuclideanTerm, EuclideanFinish);
CORTADO_GPU_MAP(EuclideanBackward, float*, const float*, const float*);

}  // namespace cortado
