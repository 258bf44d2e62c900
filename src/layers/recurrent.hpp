// recurrent.hpp — what RNN and LSTM share (private to src/layers/): RecurrentMath, the operations of a
// recurrence on the context's device so that each recurrence is written once for both devices (the
// element-wise ones are recurrent_math.hpp's functors, LSTMUnit's step among them), and Caffe's
// RecurrentLayer (blob counts, shape checks, the input transform and the carried state).
#pragma once

#include <vector>

#include "cortado/layer.hpp"
#include "cortado/math.hpp"

namespace cortado {

// ---- the operations a recurrence needs, on the CPU or on the context's GPU stream ------------------
class RecurrentMath {
 public:
  explicit RecurrentMath(Context& ctx) : ctx_(ctx), gpu_(ctx.device() == Device::kGPU) {}
  void Gemm(Trans ta, Trans tb, int m, int n, int k, float alpha, const float* a, const float* b, float beta,
            float* c) const;
  void Gemv(Trans ta, int m, int n, float alpha, const float* a, const float* x, float beta, float* y) const;
  void Copy(int64_t n, const float* x, float* y) const;
  void Set(int64_t n, float value, float* y) const;
  // y[r, :] = s[r]·x[r, :]  (accumulate: +=), rows × dim.
  void ScaleRows(int rows, int dim, const float* s, const float* x, bool accumulate, float* y) const;
  // y[i] += b[i % inner], i < n.
  void AddBroadcast(int64_t n, int64_t inner, const float* b, float* y) const;
  void Tanh(int64_t n, const float* x, float* y) const;                              // y = tanh(x)
  void TanhBackward(int64_t n, const float* y, const float* dy, float* dx) const;    // dx = dy·(1 − y²)
  // LSTMUnit's step and its gradients (recurrent_math.hpp); dc_prev or dx may be null.
  void LstmUnitForward(int n, int d, const float* c_prev, const float* x, const float* cont, float* c,
                       float* h) const;
  void LstmUnitBackward(int n, int d, const float* c_prev, const float* x, const float* cont, const float* c,
                        const float* dc, const float* dh, float* dc_prev, float* dx) const;

 private:
  Context& ctx_;
  bool gpu_;
};

// ---- Caffe's RecurrentLayer ----------------------------------------------------------------------
// Bottoms: x (T, N, ...) — I = x.count(2) inputs per step —, cont (T, N), optionally x_static (N, ...)
// (S = x_static.count(1)), and with expose_hidden the initial states (1, N, H) (RNN: h_0; LSTM: h_0,
// c_0). Tops: the output (T, N, H), H = num_output, and with expose_hidden the final states (1, N, H).
// The learnable blobs start with the input transform, in Caffe's order: W_x (G, I), b (G), [W_static
// (G, S)], G = H (RNN) or 4H (LSTM); the subclass declares the rest.
//
// As in Caffe: without expose_hidden the initial state of a forward pass is the final state of the
// previous one (zeros at first), and cont_t = 0 cuts it off; with expose_hidden it is read from the
// bottoms. No gradient reaches cont, the exposed initial states (their diffs are zeroed) or comes from
// the exposed final states (gradients do not cross batches).
class RecurrentLayer : public EitherDevice<Layer> {
 public:
  using EitherDevice::EitherDevice;
  int MinBottomBlobs() const override;
  int MaxBottomBlobs() const override { return MinBottomBlobs() + 1; }
  int ExactNumTopBlobs() const override;
  bool AllowForceBackward(int bottom_index) const override { return bottom_index != 1; }
  // Backward reads x, cont and x_static; the exposed initial states were copied into the layer's own
  // state in Forward, and the tops are copies of it.
  bool BackwardReadsBottomData(int i) const override { return !expose_hidden_ || i < first_state_bottom(); }
  bool BackwardReadsTopData(int) const override { return false; }

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override;
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;
  void InitParams() override;

 protected:
  virtual int NumStates() const = 0;  // RNN 1 (h), LSTM 2 (h, c)
  virtual int GateDim() const = 0;    // G, the width of the input transform
  // Declares the learnable blobs after the input transform's (AddParam) and the scratch buffers: the
  // states h (and c) live across steps (the initial state is the previous pass's final one) unless
  // expose_hidden, the rest only from Forward to Backward (StateScratch, AddStepScratch).
  virtual void RecurrentSetUp() = 0;
  // Shapes the subclass's scratch buffers (T_, N_, H_ are set).
  virtual void RecurrentReshape() = 0;
  virtual void Forward(const RecurrentMath& m, const BlobVec& bottom, const BlobVec& top) = 0;
  virtual void Backward(const RecurrentMath& m, const BlobVec& top, const std::vector<bool>& propagate_down,
                        const BlobVec& bottom) = 0;

  void Forward_any(const BlobVec& bottom, const BlobVec& top) override { Forward(RecurrentMath(ctx_), bottom, top); }
  void Backward_any(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override {
    Backward(RecurrentMath(ctx_), top, propagate_down, bottom);
  }

  // A learnable blob filled by the weight_filler, or by the bias_filler when is_bias; returns its index.
  int AddParam(const std::vector<int>& shape, bool is_bias);
  // gates (T, N, G) = x·W_xᵀ + b [+ x_static·W_staticᵀ at every step], into gates_->data().
  void InputTransformForward(const RecurrentMath& m, const BlobVec& bottom);
  // From dgates = gates_->diff(): the gradients of W_x, b, W_static, x and x_static; zeroes the diffs of
  // exposed initial states.
  void InputTransformBackward(const RecurrentMath& m, const std::vector<bool>& propagate_down,
                              const BlobVec& bottom);
  // Slot 0 of `states` (T+1, N, H) is the initial state: exposed state k from the bottoms, else the
  // final state (slot T) of the previous forward pass.
  void LoadInitialState(const RecurrentMath& m, const BlobVec& bottom, int k, Blob* states);
  // A state buffer (T+1, N, H) with its diff: kept across steps unless the initial state is a bottom.
  Blob* StateScratch() { return expose_hidden_ ? AddStepScratch(true) : AddScratch(true); }
  // The subclass's first learnable blob, and the bottom of the first exposed state: after x, cont
  // [, x_static] both.
  int first_recurrent_param() const { return 2 + (static_input_ ? 1 : 0); }
  int first_state_bottom() const { return 2 + (static_input_ ? 1 : 0); }

  int T_ = 0, N_ = 0, H_ = 0, I_ = 0, S_ = 0;
  bool static_input_ = false, expose_hidden_ = false;
  Blob* gates_ = nullptr;   // (T, N, G): the gate (RNN: pre-activation) inputs; diff their gradient
  Blob* static_ = nullptr;  // (N, G): x_static·W_staticᵀ; diff Σ_t dgates_t (static input only)
  Blob* ones_ = nullptr;    // T·N ones, for bias gradients (set in Backward before use)

 private:
  std::vector<bool> is_bias_;  // per learnable blob
};

}  // namespace cortado
