// recurrent.cpp — Caffe's RecurrentLayer, the part RNN and LSTM share (recurrent.hpp): blob counts and
// shape checks with Caffe's conditions, the input transform
//   gates (T, N, G) = x·W_xᵀ + b [+ x_static·W_staticᵀ, the same at every step]
// and its backward (dW_x += dgatesᵀ·x, db += Σ_rows dgates, dx = dgates·W_x; with d_static = Σ_t dgates_t:
// dW_static += d_staticᵀ·x_static, dx_static = d_static·W_static), the initial state (exposed, or carried
// from the previous forward pass as Caffe does), and RecurrentMath, which runs each operation of a
// recurrence on the CPU or on the context's GPU stream (the element-wise ones are recurrent_math.hpp's
// and neuron_math.hpp's functors, shared by both devices).
#include "recurrent.hpp"

#include "cortado/error.hpp"
#include "cortado/filler.hpp"
#include "cortado/math_gpu.hpp"
#include "neuron_math.hpp"     // TanH's functors
#include "recurrent_math.hpp"  // LSTMUnit's step, ScaleRows, AddBroadcast

namespace cortado {

// ---- RecurrentMath -------------------------------------------------------------------------------

void RecurrentMath::Gemm(Trans ta, Trans tb, int m, int n, int k, float alpha, const float* a, const float* b,
                         float beta, float* c) const {
  if (gpu_) {
    gpu_gemm(ctx_, ta, tb, m, n, k, alpha, a, b, beta, c);
  } else {
    cpu_gemm(ta, tb, m, n, k, alpha, a, b, beta, c);
  }
}

void RecurrentMath::Gemv(Trans ta, int m, int n, float alpha, const float* a, const float* x, float beta,
                         float* y) const {
  if (gpu_) {
    gpu_gemv(ctx_, ta, m, n, alpha, a, x, beta, y);
  } else {
    cpu_gemv(ta, m, n, alpha, a, x, beta, y);
  }
}

void RecurrentMath::Copy(int64_t n, const float* x, float* y) const {
  if (gpu_) {
    gpu_copy(ctx_, n, x, y);
  } else {
    cpu_copy(n, x, y);
  }
}

void RecurrentMath::Set(int64_t n, float value, float* y) const {
  if (gpu_) {
    gpu_set(ctx_, n, value, y);
  } else {
    cpu_set(n, value, y);
  }
}

void RecurrentMath::ScaleRows(int rows, int dim, const float* s, const float* x, bool accumulate, float* y) const {
  const ChannelLayout l{1, rows, dim};  // row r is channel r
  if (accumulate) {
    MapChannels(ctx_, l, recurrent::ScaleRowAdd{s}, y, x, y);
  } else {
    MapChannels(ctx_, l, recurrent::ScaleRow{s}, y, x);
  }
}

void RecurrentMath::AddBroadcast(int64_t n, int64_t inner, const float* b, float* y) const {
  if (inner == 0) return;
  ForEach(ctx_, n, recurrent::AddBroadcastStep{inner, b, y});
}

void RecurrentMath::Tanh(int64_t n, const float* x, float* y) const {
  Map(ctx_, n, neuron::TanHForward{}, y, x);
}

void RecurrentMath::TanhBackward(int64_t n, const float* y, const float* dy, float* dx) const {
  Map(ctx_, n, neuron::TanHBackward{}, dx, y, dy);
}

void RecurrentMath::LstmUnitForward(int n, int d, const float* c_prev, const float* x, const float* cont, float* c,
                                    float* h) const {
  recurrent::LstmUnitForward(ctx_, n, d, c_prev, x, cont, c, h);
}

void RecurrentMath::LstmUnitBackward(int n, int d, const float* c_prev, const float* x, const float* cont,
                                     const float* c, const float* dc, const float* dh, float* dc_prev,
                                     float* dx) const {
  recurrent::LstmUnitBackward(ctx_, n, d, c_prev, x, cont, c, dc, dh, dc_prev, dx);
}

// ---- RecurrentLayer: blobs and shapes ------------------------------------------------------------

namespace {
const char* StateName(int k) { return k == 0 ? "h_0" : "c_0"; }
}  // namespace

int RecurrentLayer::MinBottomBlobs() const {
  return 2 + (param_.recurrent_param().expose_hidden() ? NumStates() : 0);
}

int RecurrentLayer::ExactNumTopBlobs() const {
  return 1 + (param_.recurrent_param().expose_hidden() ? NumStates() : 0);
}

void RecurrentLayer::LayerSetUp(const BlobVec& bottom, const BlobVec& top) {
  const RecurrentParameter& p = param_.recurrent_param();
  const Blob& x = *bottom[0];
  CORTADO_REQUIRE(x.num_axes() >= 2, Describe(),
                  ": bottom[0] must have at least 2 axes -- (#timesteps, #streams, ...); got ", x.shape_string());
  T_ = x.shape(0);
  N_ = x.shape(1);
  const Blob& cont = *bottom[1];
  CORTADO_REQUIRE(cont.num_axes() == 2, Describe(),
                  ": bottom[1] must have exactly 2 axes -- (#timesteps, #streams); got ", cont.shape_string());
  CORTADO_REQUIRE(cont.shape(0) == T_ && cont.shape(1) == N_, Describe(), ": bottom[1] (cont) ",
                  cont.shape_string(), " must be (T, N) = (", T_, ", ", N_, ") like bottom[0] ", x.shape_string());
  expose_hidden_ = p.expose_hidden();
  static_input_ = static_cast<int>(bottom.size()) > 2 + (expose_hidden_ ? NumStates() : 0);
  if (static_input_) {
    CORTADO_REQUIRE(bottom[2]->num_axes() >= 1 && bottom[2]->shape(0) == N_, Describe(), ": bottom[2] (x_static) ",
                    bottom[2]->shape_string(), " must have N = ", N_, " streams on its first axis");
  }
  CORTADO_REQUIRE(p.num_output() > 0, Describe(), ": num_output must be positive");
  // The unrolled net of Caffe transforms x with an InnerProduct on axis 2, which x must have.
  CORTADO_REQUIRE(x.num_axes() >= 3, Describe(), ": bottom[0] ", x.shape_string(),
                  " has no input axis: x must be (#timesteps, #streams, inputs...)");
  H_ = static_cast<int>(p.num_output());
  I_ = static_cast<int>(x.count(2));
  S_ = static_input_ ? static_cast<int>(bottom[2]->count(1)) : 0;

  blobs_.clear();
  is_bias_.clear();
  const int g = GateDim();
  AddParam({g, I_}, false);                   // W_xh / W_xc
  AddParam({g}, true);                        // b_h / b_c
  if (static_input_) AddParam({g, S_}, false);  // W_xh_static / W_xc_static
  gates_ = AddStepScratch(true);
  if (static_input_) static_ = AddStepScratch(true);
  ones_ = AddStepScratch();
  RecurrentSetUp();
}

void RecurrentLayer::Reshape(const BlobVec& bottom, const BlobVec& top) {
  const Blob& x = *bottom[0];
  CORTADO_REQUIRE(x.num_axes() >= 3 && x.shape(0) == T_, Describe(), ": bottom[0] ", x.shape_string(),
                  " must stay (", T_, " timesteps, #streams, inputs...): the number of timesteps cannot change");
  N_ = x.shape(1);
  CORTADO_REQUIRE(x.count(2) == I_, Describe(), ": bottom[0] ", x.shape_string(), " has ", x.count(2),
                  " inputs per step, but the weights expect ", I_);
  const Blob& cont = *bottom[1];
  CORTADO_REQUIRE(cont.num_axes() == 2 && cont.shape(0) == T_ && cont.shape(1) == N_, Describe(),
                  ": bottom[1] (cont) ", cont.shape_string(), " must be (T, N) = (", T_, ", ", N_, ")");
  if (static_input_) {
    const Blob& xs = *bottom[2];
    CORTADO_REQUIRE(xs.shape(0) == N_ && xs.count(1) == S_, Describe(), ": bottom[2] (x_static) ",
                    xs.shape_string(), " must be (", N_, " streams, ", S_, " inputs)");
  }
  const std::vector<int> state_shape{1, N_, H_};
  if (expose_hidden_) {
    for (int k = 0; k < NumStates(); ++k) {
      const int i = first_state_bottom() + k;
      CORTADO_REQUIRE(bottom[i]->shape() == state_shape, Describe(), ": shape mismatch - initial state ",
                      StateName(k), " must be 1 ", N_, " ", H_, " vs. bottom[", i, "]: ", bottom[i]->shape_string());
    }
  }
  const int g = GateDim();
  gates_->Reshape({T_, N_, g});
  if (static_) static_->Reshape({N_, g});
  ones_->Reshape({T_ * N_});
  top[0]->Reshape({T_, N_, H_});
  if (expose_hidden_)
    for (int k = 0; k < NumStates(); ++k) top[1 + k]->Reshape(state_shape);
  RecurrentReshape();
}

int RecurrentLayer::AddParam(const std::vector<int>& shape, bool is_bias) {
  blobs_.push_back(std::make_shared<Blob>(shape));
  is_bias_.push_back(is_bias);
  return static_cast<int>(blobs_.size()) - 1;
}

void RecurrentLayer::InitParams() {
  const RecurrentParameter& p = param_.recurrent_param();
  for (size_t i = 0; i < blobs_.size(); ++i)
    FillBlob(is_bias_[i] ? p.bias_filler() : p.weight_filler(), blobs_[i].get(), ctx_.rng());
}

// ---- RecurrentLayer: input transform and initial state -------------------------------------------

void RecurrentLayer::InputTransformForward(const RecurrentMath& m, const BlobVec& bottom) {
  const int rows = T_ * N_, g = GateDim();
  float* gates = gates_->data();
  m.Gemm(Trans::kNo, Trans::kYes, rows, g, I_, 1.0f, bottom[0]->data(), blobs_[0]->data(), 0.0f, gates);
  m.AddBroadcast(static_cast<int64_t>(rows) * g, g, blobs_[1]->data(), gates);
  if (static_input_) {
    m.Gemm(Trans::kNo, Trans::kYes, N_, g, S_, 1.0f, bottom[2]->data(), blobs_[2]->data(), 0.0f, static_->data());
    m.AddBroadcast(static_cast<int64_t>(rows) * g, static_cast<int64_t>(N_) * g, static_->data(), gates);
  }
}

void RecurrentLayer::InputTransformBackward(const RecurrentMath& m, const std::vector<bool>& propagate_down,
                                            const BlobVec& bottom) {
  const int rows = T_ * N_, g = GateDim();
  const float* dgates = gates_->diff();
  if (param_propagate_down(0))
    m.Gemm(Trans::kYes, Trans::kNo, g, I_, rows, 1.0f, dgates, bottom[0]->data(), 1.0f, blobs_[0]->diff());
  if (param_propagate_down(1) || static_input_) m.Set(rows, 1.0f, ones_->data());
  if (param_propagate_down(1)) m.Gemv(Trans::kYes, rows, g, 1.0f, dgates, ones_->data(), 1.0f, blobs_[1]->diff());
  if (propagate_down[0])
    m.Gemm(Trans::kNo, Trans::kNo, rows, I_, g, 1.0f, dgates, blobs_[0]->data(), 0.0f, bottom[0]->diff());
  if (static_input_) {
    float* dstatic = static_->diff();  // Σ_t dgates_t, (N, G)
    m.Gemv(Trans::kYes, T_, N_ * g, 1.0f, dgates, ones_->data(), 0.0f, dstatic);
    if (param_propagate_down(2))
      m.Gemm(Trans::kYes, Trans::kNo, g, S_, N_, 1.0f, dstatic, bottom[2]->data(), 1.0f, blobs_[2]->diff());
    if (propagate_down[2])
      m.Gemm(Trans::kNo, Trans::kNo, N_, S_, g, 1.0f, dstatic, blobs_[2]->data(), 0.0f, bottom[2]->diff());
  }
  if (expose_hidden_) {  // Caffe passes no gradient to the initial states
    for (int k = 0; k < NumStates(); ++k) {
      const int i = first_state_bottom() + k;
      if (propagate_down[i] && bottom[i]->has_diff()) m.Set(bottom[i]->count(), 0.0f, bottom[i]->diff());
    }
  }
}

void RecurrentLayer::LoadInitialState(const RecurrentMath& m, const BlobVec& bottom, int k, Blob* states) {
  const int64_t slot = static_cast<int64_t>(N_) * H_;
  if (expose_hidden_) {
    m.Copy(slot, bottom[first_state_bottom() + k]->data(), states->data());
  } else {
    m.Copy(slot, states->data() + T_ * slot, states->data());
  }
}

}  // namespace cortado
