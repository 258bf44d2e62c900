// kernels/recurrent.hpp — launchers of the GPU kernels behind LSTMUnit, RNN and LSTM. No CUDA types, so
// the layers' .cpp files call them from Forward_gpu / Backward_gpu; defined in src/layers/cuda/
// lstm_unit.cu (LSTMUnit) and src/layers/cuda/recurrent.cu (helpers) (CORTADO_GPU_ONLY: in a CPU-only
// build each throws). Every pointer is a device pointer; everything runs on
// the context's compute stream without waiting.
#pragma once

#include <cstdint>

#include "cortado/context.hpp"
#include "cortado/kernels/for_each.hpp"  // CORTADO_GPU_ONLY

namespace cortado {

// ---- LSTMUnit (num streams N, hidden size D) ----------------------------------------------------------
// x (N, 4D) holds the gate inputs [i' f' o' g'] of each stream; i = σ(i'), f = σ(f'), o = σ(o'),
// g = tanh(g'):  c = cont_n·f·c_prev + i·g,  h = o·tanh(c).  c_prev, c, h are (N, D), cont (N).
CORTADO_GPU_ONLY(void LstmUnitForwardGpu(Context& ctx, int n, int d, const float* c_prev, const float* x,
                                         const float* cont, float* c, float* h))
// With dc̃ = dc + dh·o·(1 − tanh²c):  dc_prev = cont_n·f·dc̃;  dx = [dc̃·g·i(1−i), dc̃·cont_n·c_prev·f(1−f),
// dh·tanh(c)·o(1−o), dc̃·i·(1−g²)]. dc_prev or dx may be null (not wanted). dc_prev may not alias dc.
CORTADO_GPU_ONLY(void LstmUnitBackwardGpu(Context& ctx, int n, int d, const float* c_prev, const float* x,
                                          const float* cont, const float* c, const float* dc, const float* dh,
                                          float* dc_prev, float* dx))

// ---- RNN / LSTM helpers ----------------------------------------------------------------------------
// y[r, j] = s[r]·x[r, j] (accumulate: y[r, j] += s[r]·x[r, j]) for rows r < rows, columns j < dim.
CORTADO_GPU_ONLY(void ScaleRowsGpu(Context& ctx, int rows, int dim, const float* s, const float* x, bool accumulate,
                                   float* y))
// y[i] += b[i % inner] for i < n: a bias or a per-stream term added at every time step.
CORTADO_GPU_ONLY(void AddBroadcastGpu(Context& ctx, int64_t n, int64_t inner, const float* b, float* y))

}  // namespace cortado
