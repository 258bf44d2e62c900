// lstm.cpp — LSTM, Caffe's long short-term memory layer (the recurrence of Caffe's unrolled net,
// computed directly with one matrix product per time step; see recurrent.hpp for bottoms, tops and the
// carried state). With H = num_output, for t = 1..T:
//   gates_t (N, 4H) = W_xc·x_t + b_c [+ W_xc_static·x_static] + W_hc·(cont_t·h_{t−1})
//   c_t, h_t = LSTMUnit(c_{t−1}, gates_t, cont_t):  [i f o g] = [σ σ σ tanh](gates_t),
//              c_t = cont_t·f·c_{t−1} + i·g,  h_t = o·tanh(c_t)
// Top: h (T, N, H); with expose_hidden also h_T, c_T (1, N, H), after the bottoms h_0, c_0 (1, N, H).
// Learnable blobs, in Caffe's order: W_xc (4H, I), b_c (4H), [W_xc_static (4H, S)], W_hc (4H, H).
// Backward (through time, within the batch): LSTMUnit's backward at each step from dh_t (the top's
// gradient plus cont_{t+1}·(dgates_{t+1}·W_hc)) and dc_t (from step t+1; zero at T);
// dW_hc += Σ_t dgates_tᵀ·(cont_t·h_{t−1}); then the input transform's gradients from dgates.
// Written once for both devices through RecurrentMath; LSTMUnit's step is recurrent_math.hpp's.
#include "recurrent.hpp"

#include "cortado/layer_registry.hpp"

namespace cortado {

class LSTMLayer : public RecurrentLayer {
 public:
  using RecurrentLayer::RecurrentLayer;
  const char* type() const override { return "LSTM"; }

 protected:
  int NumStates() const override { return 2; }
  int GateDim() const override { return 4 * H_; }

  void RecurrentSetUp() override {
    w_hc_ = AddParam({4 * H_, H_}, false);
    h_ = StateScratch();
    c_ = StateScratch();
    hc_ = AddStepScratch(true);
  }

  void RecurrentReshape() override {
    h_->Reshape({T_ + 1, N_, H_});
    c_->Reshape({T_ + 1, N_, H_});
    hc_->Reshape({T_, N_, H_});
  }

  void Forward(const RecurrentMath& m, const BlobVec& bottom, const BlobVec& top) override {
    const int64_t slot = static_cast<int64_t>(N_) * H_;  // one step of h or c
    const int64_t gate_slot = 4 * slot;                  // one step of gates
    InputTransformForward(m, bottom);  // gates_ = W_xc·x + b_c [+ static]
    LoadInitialState(m, bottom, 0, h_);
    LoadInitialState(m, bottom, 1, c_);
    const float* cont = bottom[1]->data();
    const float* w_hc = blobs_[w_hc_]->data();
    for (int t = 0; t < T_; ++t) {
      float* hc = hc_->data() + t * slot;
      float* gates = gates_->data() + t * gate_slot;
      m.ScaleRows(N_, H_, cont + t * N_, h_->data() + t * slot, false, hc);
      m.Gemm(Trans::kNo, Trans::kYes, N_, 4 * H_, H_, 1.0f, hc, w_hc, 1.0f, gates);
      m.LstmUnitForward(N_, H_, c_->data() + t * slot, gates, cont + t * N_, c_->data() + (t + 1) * slot,
                        h_->data() + (t + 1) * slot);
    }
    m.Copy(T_ * slot, h_->data() + slot, top[0]->data());
    if (expose_hidden_) {
      m.Copy(slot, h_->data() + T_ * slot, top[1]->data());
      m.Copy(slot, c_->data() + T_ * slot, top[2]->data());
    }
  }

  void Backward(const RecurrentMath& m, const BlobVec& top, const std::vector<bool>& propagate_down,
                const BlobVec& bottom) override {
    const int64_t slot = static_cast<int64_t>(N_) * H_;
    const int64_t gate_slot = 4 * slot;
    float* dh = h_->diff();
    float* dc = c_->diff();
    m.Copy(T_ * slot, top[0]->diff(), dh + slot);
    m.Set(slot, 0.0f, dc + T_ * slot);
    const float* cont = bottom[1]->data();
    const float* w_hc = blobs_[w_hc_]->data();
    for (int t = T_ - 1; t >= 0; --t) {
      float* dgates = gates_->diff() + t * gate_slot;
      m.LstmUnitBackward(N_, H_, c_->data() + t * slot, gates_->data() + t * gate_slot, cont + t * N_,
                         c_->data() + (t + 1) * slot, dc + (t + 1) * slot, dh + (t + 1) * slot, dc + t * slot,
                         dgates);
      if (t == 0) break;  // h_0's gradient goes nowhere
      float* dhc = hc_->diff() + t * slot;
      m.Gemm(Trans::kNo, Trans::kNo, N_, H_, 4 * H_, 1.0f, dgates, w_hc, 0.0f, dhc);
      m.ScaleRows(N_, H_, cont + t * N_, dhc, true, dh + t * slot);
    }
    if (param_propagate_down(w_hc_))
      m.Gemm(Trans::kYes, Trans::kNo, 4 * H_, H_, T_ * N_, 1.0f, gates_->diff(), hc_->data(), 1.0f,
             blobs_[w_hc_]->diff());
    InputTransformBackward(m, propagate_down, bottom);
  }

 private:
  int w_hc_ = 0;        // index into blobs_
  Blob* h_ = nullptr;   // (T+1, N, H): h_0 … h_T; diff dh
  Blob* c_ = nullptr;   // (T+1, N, H): c_0 … c_T; diff dc
  Blob* hc_ = nullptr;  // (T, N, H): cont_t·h_{t−1}; diff its gradient at step t (scratch)
};

CORTADO_REGISTER_LAYER(LSTM, LSTMLayer);

}  // namespace cortado
