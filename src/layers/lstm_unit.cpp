// lstm_unit.cpp — LSTMUnit, Caffe's single LSTM step (the LSTM layer runs the same math at every step).
// Bottoms: c_prev (1, N, D), x (1, N, 4D) the gate inputs [i' f' o' g'], cont (1, N). Tops: c, h (1, N, D).
//   i = σ(i'), f = σ(f'), o = σ(o'), g = tanh(g');  c = cont·f·c_prev + i·g;  h = o·tanh(c)
// Backward, with dc̃ = dc + dh·o·(1 − tanh²c):  dc_prev = cont·f·dc̃;
//   dx = [dc̃·g·i(1−i),  dc̃·cont·c_prev·f(1−f),  dh·tanh(c)·o(1−o),  dc̃·i·(1−g²)]
// (Caffe's GPU formulas; its CPU code uses (cont·f)(1 − cont·f) for f', the same for cont ∈ {0, 1}).
// No gradient reaches cont. No parameters.
// The arithmetic is recurrent_math.hpp's, shared by both devices (and by the LSTM layer).
#include "cortado/error.hpp"
#include "cortado/layer_registry.hpp"
#include "recurrent_math.hpp"

namespace cortado {

class LSTMUnitLayer : public EitherDevice<Layer> {
 public:
  using EitherDevice::EitherDevice;
  const char* type() const override { return "LSTMUnit"; }
  int ExactNumBottomBlobs() const override { return 3; }
  int ExactNumTopBlobs() const override { return 2; }
  bool AllowForceBackward(int bottom_index) const override { return bottom_index != 2; }
  bool BackwardReadsTopData(int i) const override { return i == 0; }  // c, not h

  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    static const char* const kNames[] = {"c_prev", "x", "cont"};
    const int num = bottom[0]->num_axes() >= 2 ? bottom[0]->shape(1) : -1;
    for (int b = 0; b < 3; ++b) {
      const Blob& blob = *bottom[b];
      const int axes = b == 2 ? 2 : 3;
      CORTADO_REQUIRE(blob.num_axes() == axes && blob.shape(0) == 1 && blob.shape(1) == num, Describe(),
                      ": bottom[", b, "] (", kNames[b], ") ", blob.shape_string(), " must be ",
                      b == 2 ? "(1, N)" : b == 0 ? "(1, N, D)" : "(1, N, 4D)", " with N = ", num,
                      " the streams of bottom[0] ", bottom[0]->shape_string());
    }
    n_ = num;
    d_ = bottom[0]->shape(2);
    CORTADO_REQUIRE(bottom[1]->shape(2) == 4 * d_, Describe(), ": bottom[1] (x) ", bottom[1]->shape_string(),
                    " must have 4·D = ", 4 * d_, " gate inputs per stream (D from bottom[0] ",
                    bottom[0]->shape_string(), ")");
    top[0]->ReshapeLike(*bottom[0]);
    top[1]->ReshapeLike(*bottom[0]);
  }

 protected:
  void Forward_any(const BlobVec& bottom, const BlobVec& top) override {
    recurrent::LstmUnitForward(ctx_, n_, d_, bottom[0]->data(), bottom[1]->data(), bottom[2]->data(), top[0]->data(),
                               top[1]->data());
  }

  void Backward_any(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override {
    if (!propagate_down[0] && !propagate_down[1]) return;
    recurrent::LstmUnitBackward(ctx_, n_, d_, bottom[0]->data(), bottom[1]->data(), bottom[2]->data(),
                                top[0]->data(), top[0]->diff(), top[1]->diff(),
                                propagate_down[0] ? bottom[0]->diff() : nullptr,
                                propagate_down[1] ? bottom[1]->diff() : nullptr);
  }

 private:
  int n_ = 0, d_ = 0;
};

CORTADO_REGISTER_LAYER(LSTMUnit, LSTMUnitLayer);

}  // namespace cortado
