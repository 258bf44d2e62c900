// lstm_unit.cu — LSTMUnit's kernels (kernels/recurrent.hpp), also used by the LSTM layer at every time
// step: one thread per (stream, hidden unit) computes the four gate activations from the gate inputs,
// so nothing is stored between forward and backward but c.
//   forward:  c = cont_n·f·c_prev + i·g,  h = o·tanh(c)
//   backward: dc̃ = dc + dh·o·(1 − tanh²c);  dc_prev = cont_n·f·dc̃;  the gate inputs' gradients are
//             dc̃·g·i(1−i), dc̃·cont_n·c_prev·f(1−f), dh·tanh(c)·o(1−o), dc̃·i·(1−g²).
#include "cortado/cuda/resources.hpp"  // cuda::Stream, CORTADO_KERNEL_LOOP, CORTADO_LAUNCH
#include "cortado/kernels/recurrent.hpp"

namespace cortado {

namespace {

__device__ inline float Sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

__global__ void LstmUnitForwardKernel(int64_t total, int d, const float* c_prev, const float* x,
                                      const float* cont, float* c, float* h) {
  CORTADO_KERNEL_LOOP(index, total) {
    const int64_t n = index / d;
    const int64_t j = index % d;
    const float* xn = x + 4 * d * n;
    const float i = Sigmoid(xn[j]);
    const float f = Sigmoid(xn[d + j]);
    const float o = Sigmoid(xn[2 * d + j]);
    const float g = tanhf(xn[3 * d + j]);
    const float cv = cont[n] * f * c_prev[index] + i * g;
    c[index] = cv;
    h[index] = o * tanhf(cv);
  }
}

__global__ void LstmUnitBackwardKernel(int64_t total, int d, const float* c_prev, const float* x,
                                       const float* cont, const float* c, const float* dc, const float* dh,
                                       float* dc_prev, float* dx) {
  CORTADO_KERNEL_LOOP(index, total) {
    const int64_t n = index / d;
    const int64_t j = index % d;
    const float* xn = x + 4 * d * n;
    const float i = Sigmoid(xn[j]);
    const float f = Sigmoid(xn[d + j]);
    const float o = Sigmoid(xn[2 * d + j]);
    const float g = tanhf(xn[3 * d + j]);
    const float cont_n = cont[n];
    const float tanh_c = tanhf(c[index]);
    const float dc_term = dc[index] + dh[index] * o * (1.0f - tanh_c * tanh_c);
    if (dc_prev) dc_prev[index] = cont_n * f * dc_term;
    if (dx) {
      float* dxn = dx + 4 * d * n;
      dxn[j] = dc_term * g * i * (1.0f - i);
      dxn[d + j] = dc_term * cont_n * c_prev[index] * f * (1.0f - f);
      dxn[2 * d + j] = dh[index] * tanh_c * o * (1.0f - o);
      dxn[3 * d + j] = dc_term * i * (1.0f - g * g);
    }
  }
}

}  // namespace

void LstmUnitForwardGpu(Context& ctx, int n, int d, const float* c_prev, const float* x, const float* cont,
                        float* c, float* h) {
  const int64_t total = static_cast<int64_t>(n) * d;
  if (total == 0) return;
  CORTADO_LAUNCH(LstmUnitForwardKernel, cuda::BlocksFor(total), cuda::kThreads, 0, cuda::Stream(ctx), total, d, c_prev,
                 x, cont, c, h);
}

void LstmUnitBackwardGpu(Context& ctx, int n, int d, const float* c_prev, const float* x, const float* cont,
                         const float* c, const float* dc, const float* dh, float* dc_prev, float* dx) {
  const int64_t total = static_cast<int64_t>(n) * d;
  if (total == 0 || (!dc_prev && !dx)) return;
  CORTADO_LAUNCH(LstmUnitBackwardKernel, cuda::BlocksFor(total), cuda::kThreads, 0, cuda::Stream(ctx), total, d, c_prev,
                 x, cont, c, dc, dh, dc_prev, dx);
}

}  // namespace cortado
