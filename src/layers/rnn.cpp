// rnn.cpp — RNN, Caffe's simple recurrent layer (the recurrence of Caffe's unrolled net, computed
// directly with one matrix product per time step; see recurrent.hpp for bottoms, tops and the state).
// With H = num_output, for t = 1..T:
//   h_t = tanh(W_hh·(cont_t·h_{t−1}) + W_xh·x_t + b_h [+ W_xh_static·x_static]),  o_t = tanh(W_ho·h_t + b_o)
// Top: o (T, N, H); with expose_hidden also h_T (1, N, H) after the bottom h_0 (1, N, H).
// Learnable blobs, in Caffe's order: W_xh (H, I), b_h (H), [W_xh_static (H, S)], W_hh (H, H), W_ho (H, H),
// b_o (H); weights from weight_filler, biases from bias_filler.
// Backward (through time, within the batch): dô = do·(1 − o²); dW_ho += dôᵀ·h, db_o += Σ dô;
// dh_t = dô_t·W_ho + cont_{t+1}·(dpre_{t+1}·W_hh);  dpre_t = dh_t·(1 − h_t²);
// dW_hh += Σ_t dpre_tᵀ·(cont_t·h_{t−1}); then the input transform's gradients from dpre.
// Written once for both devices through RecurrentMath (its element-wise steps: recurrent_math.hpp).
#include "recurrent.hpp"

#include "cortado/layer_registry.hpp"

namespace cortado {

class RNNLayer : public RecurrentLayer {
 public:
  using RecurrentLayer::RecurrentLayer;
  const char* type() const override { return "RNN"; }

 protected:
  int NumStates() const override { return 1; }
  int GateDim() const override { return H_; }

  void RecurrentSetUp() override {
    w_hh_ = AddParam({H_, H_}, false);
    w_ho_ = AddParam({H_, H_}, false);
    b_o_ = AddParam({H_}, true);
    h_ = StateScratch();
    hc_ = AddStepScratch(true);
    o_ = AddStepScratch(true);
  }

  void RecurrentReshape() override {
    h_->Reshape({T_ + 1, N_, H_});
    hc_->Reshape({T_, N_, H_});
    o_->Reshape({T_, N_, H_});
  }

  void Forward(const RecurrentMath& m, const BlobVec& bottom, const BlobVec& top) override {
    const int64_t slot = static_cast<int64_t>(N_) * H_;
    const int rows = T_ * N_;
    const int64_t all = static_cast<int64_t>(rows) * H_;
    InputTransformForward(m, bottom);  // gates_ = W_xh·x + b_h [+ static]
    LoadInitialState(m, bottom, 0, h_);
    const float* cont = bottom[1]->data();
    const float* w_hh = blobs_[w_hh_]->data();
    for (int t = 0; t < T_; ++t) {
      float* hc = hc_->data() + t * slot;
      float* h = h_->data() + (t + 1) * slot;
      m.ScaleRows(N_, H_, cont + t * N_, h_->data() + t * slot, false, hc);
      m.Copy(slot, gates_->data() + t * slot, h);
      m.Gemm(Trans::kNo, Trans::kYes, N_, H_, H_, 1.0f, hc, w_hh, 1.0f, h);
      m.Tanh(slot, h, h);
    }
    float* o = o_->data();
    m.Gemm(Trans::kNo, Trans::kYes, rows, H_, H_, 1.0f, h_->data() + slot, blobs_[w_ho_]->data(), 0.0f, o);
    m.AddBroadcast(all, H_, blobs_[b_o_]->data(), o);
    m.Tanh(all, o, o);
    m.Copy(all, o, top[0]->data());
    if (expose_hidden_) m.Copy(slot, h_->data() + T_ * slot, top[1]->data());
  }

  void Backward(const RecurrentMath& m, const BlobVec& top, const std::vector<bool>& propagate_down,
                const BlobVec& bottom) override {
    const int64_t slot = static_cast<int64_t>(N_) * H_;
    const int rows = T_ * N_;
    const int64_t all = static_cast<int64_t>(rows) * H_;
    float* d_opre = o_->diff();
    m.TanhBackward(all, o_->data(), top[0]->diff(), d_opre);
    const float* h1 = h_->data() + slot;  // h_1 … h_T
    if (param_propagate_down(w_ho_))
      m.Gemm(Trans::kYes, Trans::kNo, H_, H_, rows, 1.0f, d_opre, h1, 1.0f, blobs_[w_ho_]->diff());
    if (param_propagate_down(b_o_)) {
      m.Set(rows, 1.0f, ones_->data());
      m.Gemv(Trans::kYes, rows, H_, 1.0f, d_opre, ones_->data(), 1.0f, blobs_[b_o_]->diff());
    }
    float* dh = h_->diff();
    m.Gemm(Trans::kNo, Trans::kNo, rows, H_, H_, 1.0f, d_opre, blobs_[w_ho_]->data(), 0.0f, dh + slot);
    const float* cont = bottom[1]->data();
    const float* w_hh = blobs_[w_hh_]->data();
    float* dpre = gates_->diff();
    for (int t = T_ - 1; t >= 0; --t) {
      m.TanhBackward(slot, h_->data() + (t + 1) * slot, dh + (t + 1) * slot, dpre + t * slot);
      if (t == 0) break;  // h_0's gradient goes nowhere
      float* dhc = hc_->diff() + t * slot;
      m.Gemm(Trans::kNo, Trans::kNo, N_, H_, H_, 1.0f, dpre + t * slot, w_hh, 0.0f, dhc);
      m.ScaleRows(N_, H_, cont + t * N_, dhc, true, dh + t * slot);
    }
    if (param_propagate_down(w_hh_))
      m.Gemm(Trans::kYes, Trans::kNo, H_, H_, rows, 1.0f, dpre, hc_->data(), 1.0f, blobs_[w_hh_]->diff());
    InputTransformBackward(m, propagate_down, bottom);
  }

 private:
  int w_hh_ = 0, w_ho_ = 0, b_o_ = 0;  // indices into blobs_
  Blob* h_ = nullptr;   // (T+1, N, H): h_0 … h_T; diff dh
  Blob* hc_ = nullptr;  // (T, N, H): cont_t·h_{t−1}; diff its gradient at step t (scratch)
  Blob* o_ = nullptr;   // (T, N, H): o; diff the gradient of W_ho·h + b_o
};

CORTADO_REGISTER_LAYER(RNN, RNNLayer);

}  // namespace cortado
