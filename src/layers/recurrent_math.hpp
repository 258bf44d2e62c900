// recurrent_math.hpp — the element-wise arithmetic of LSTMUnit, RNN and LSTM, once for both devices
// (kernels/for_each.hpp). lstm_unit.cpp and recurrent.cpp (RecurrentMath, for RNN and LSTM) run it;
// cuda/recurrent_math.cu instantiates it for the GPU.
//   LSTMUnit, per (stream n, hidden unit j) of N streams and D units (ForEach): x (N, 4D) holds the gate
//     inputs [i' f' o' g'] of each stream; i = σ(i'), f = σ(f'), o = σ(o'), g = tanh(g'):
//       c = cont_n·f·c_prev + i·g,  h = o·tanh(c);
//     backward, with dc̃ = dc + dh·o·(1 − tanh²c):  dc_prev = cont_n·f·dc̃;
//       dx = [dc̃·g·i(1−i), dc̃·cont_n·c_prev·f(1−f), dh·tanh(c)·o(1−o), dc̃·i·(1−g²)]
//     (recomputing the gates, so nothing but c is kept between forward and backward).
//   ScaleRows: y[r, j] = s[r]·x[r, j], or y[r, j] + s[r]·x[r, j] (MapChannels over the rows).
//   AddBroadcast: y[i] += b[i % inner] — a bias, or a per-stream term added at every time step (ForEach).
#pragma once

#include <math.h>

#include <cstdint>

#include "cortado/context.hpp"
#include "cortado/kernels/for_each.hpp"
#include "neuron_math.hpp"  // SigmoidForward

namespace cortado::recurrent {

// ---- LSTMUnit -------------------------------------------------------------------------------------
// Unit j's gates from its stream's gate inputs xn = [i' f' o' g'] (4·d values).
struct Gates {
  float i, f, o, g;
};
CORTADO_HOST_DEVICE inline Gates GatesOf(const float* xn, int64_t d, int64_t j) {
  const neuron::SigmoidForward sigmoid;
  return {sigmoid(xn[j]), sigmoid(xn[d + j]), sigmoid(xn[2 * d + j]), tanhf(xn[3 * d + j])};
}

// Index (n, j) = n·d + j of c_prev, c and h (N, D).
struct LstmUnitForwardStep {
  int64_t d;
  const float* c_prev;
  const float* x;
  const float* cont;
  float* c;
  float* h;
  CORTADO_HOST_DEVICE void operator()(int64_t index) const {
    const int64_t n = index / d, j = index % d;
    const auto [i, f, o, g] = GatesOf(x + 4 * d * n, d, j);
    const float cv = cont[n] * f * c_prev[index] + i * g;
    c[index] = cv;
    h[index] = o * tanhf(cv);
  }
};

// dc_prev and dx are written unless null; dc_prev may not alias dc.
struct LstmUnitBackwardStep {
  int64_t d;
  const float* c_prev;
  const float* x;
  const float* cont;
  const float* c;
  const float* dc;
  const float* dh;
  float* dc_prev;
  float* dx;
  CORTADO_HOST_DEVICE void operator()(int64_t index) const {
    const int64_t n = index / d, j = index % d;
    const auto [i, f, o, g] = GatesOf(x + 4 * d * n, d, j);
    const float tanh_c = tanhf(c[index]);
    const float dc_term = dc[index] + dh[index] * o * (1.0f - tanh_c * tanh_c);
    if (dc_prev) dc_prev[index] = cont[n] * f * dc_term;
    if (dx) {
      float* dxn = dx + 4 * d * n;
      dxn[j] = dc_term * g * i * (1.0f - i);
      dxn[d + j] = dc_term * cont[n] * c_prev[index] * f * (1.0f - f);
      dxn[2 * d + j] = dh[index] * tanh_c * o * (1.0f - o);
      dxn[3 * d + j] = dc_term * i * (1.0f - g * g);
    }
  }
};

// One LSTM step for n streams of d units on the context's device: c, h from c_prev, x, cont.
inline void LstmUnitForward(Context& ctx, int n, int d, const float* c_prev, const float* x, const float* cont,
                            float* c, float* h) {
  ForEach(ctx, static_cast<int64_t>(n) * d, LstmUnitForwardStep{d, c_prev, x, cont, c, h});
}

// Its gradients dc_prev and dx (either may be null: not wanted).
inline void LstmUnitBackward(Context& ctx, int n, int d, const float* c_prev, const float* x, const float* cont,
                             const float* c, const float* dc, const float* dh, float* dc_prev, float* dx) {
  if (!dc_prev && !dx) return;
  ForEach(ctx, static_cast<int64_t>(n) * d, LstmUnitBackwardStep{d, c_prev, x, cont, c, dc, dh, dc_prev, dx});
}

// ---- RNN / LSTM helpers ---------------------------------------------------------------------------
struct ScaleRow {  // y = s[r]·x
  const float* s;
  CORTADO_HOST_DEVICE float operator()(int64_t r, float x) const { return s[r] * x; }
};
struct ScaleRowAdd {  // y = y + s[r]·x
  const float* s;
  CORTADO_HOST_DEVICE float operator()(int64_t r, float x, float y) const { return y + s[r] * x; }
};

struct AddBroadcastStep {  // y[i] += b[i % inner]
  int64_t inner;
  const float* b;
  float* y;
  CORTADO_HOST_DEVICE void operator()(int64_t i) const { y[i] += b[i % inner]; }
};

}  // namespace cortado::recurrent
