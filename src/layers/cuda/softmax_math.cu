// softmax_math.cu — the GPU side of softmax_math.hpp (Softmax, SoftmaxWithLoss, InfogainLoss): each
// functor instantiated for ForEach over positions (one thread per position: W = 1) or H's rows, and
// the loss terms for Total.
#include "../softmax_math.hpp"
#include "cortado/cuda/for_each.cuh"

namespace cortado {

CORTADO_GPU_FOR_EACH(softmax::Forward<1>);
CORTADO_GPU_FOR_EACH(softmax::Backward<1>);
CORTADO_GPU_TOTAL(softmax::LossTerm, loss::StoreLoss);
CORTADO_GPU_TOTAL(softmax::SoftmaxAndLossTerm, loss::StoreLoss);
CORTADO_GPU_FOR_EACH(softmax::LossGrad<1>);
CORTADO_GPU_TOTAL(softmax::InfogainTerm, loss::StoreLoss);
CORTADO_GPU_FOR_EACH(softmax::RowSums);
CORTADO_GPU_FOR_EACH(softmax::InfogainGrad);

}  // namespace cortado
