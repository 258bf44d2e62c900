// eltwise.cpp — Eltwise: combines bottoms of one shape element by element.
//   SUM (default): y = Σ_k c_k·x_k, coeff c_k (one per bottom, default 1); dx_k = c_k·dy.
//   PROD: y = Π_k x_k; dx_k = dy·Π_{j≠k} x_j (stable_prod_grad, the default) or dy·y/x_k.
//   MAX:  y = max_k x_k; the winning bottom per element (the first on ties) is kept in a scratch
//         mask, and dx_k = dy where bottom k won, else 0.
// GPU: the same steps with math_gpu.hpp; MAX's comparison and gradient are kernels (cuda/eltwise.cu).
#include "cortado/error.hpp"
#include "cortado/kernels/neuron.hpp"
#include "cortado/layer_registry.hpp"
#include "cortado/math.hpp"
#include "cortado/math_gpu.hpp"

namespace cortado {

class EltwiseLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Eltwise"; }
  int MinBottomBlobs() const override { return 2; }
  int ExactNumTopBlobs() const override { return 1; }
  // PROD reads the bottoms (and y unless stable_prod_grad); SUM reads nothing, MAX the mask.
  bool BackwardReadsBottomData(int) const override { return op_ == EltwiseParameter::PROD; }
  bool BackwardReadsTopData(int) const override {
    return op_ == EltwiseParameter::PROD && !param_.eltwise_param().stable_prod_grad();
  }

  void LayerSetUp(const BlobVec& bottom, const BlobVec&) override {
    const EltwiseParameter& p = param_.eltwise_param();
    op_ = p.operation();
    const int n = static_cast<int>(bottom.size());
    CORTADO_REQUIRE(p.coeff_size() == 0 || op_ == EltwiseParameter::SUM, Describe(),
                    ": coeff applies only to operation SUM, not ", EltwiseParameter::EltwiseOp_Name(op_));
    CORTADO_REQUIRE(p.coeff_size() == 0 || p.coeff_size() == n, Describe(), ": has ", n, " bottoms but ",
                    p.coeff_size(), " coeff values; give one per bottom");
    coeff_.assign(n, 1.0f);
    for (int k = 0; k < p.coeff_size(); ++k) coeff_[k] = p.coeff(k);
    if (op_ == EltwiseParameter::MAX) mask_ = AddStepScratch();
  }

  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    for (size_t k = 1; k < bottom.size(); ++k)
      CORTADO_REQUIRE(bottom[k]->shape() == bottom[0]->shape(), Describe(), ": bottom ", k, " has shape ",
                      bottom[k]->shape_string(), " but bottom 0 has ", bottom[0]->shape_string(),
                      "; all bottoms must have the same shape");
    top[0]->ReshapeLike(*bottom[0]);
    if (mask_) mask_->ReshapeLike(*bottom[0]);
  }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const int64_t n = top[0]->count();
    float* y = top[0]->data();
    switch (op_) {
      case EltwiseParameter::PROD:
        cpu_mul(n, bottom[0]->data(), bottom[1]->data(), y);
        for (size_t k = 2; k < bottom.size(); ++k) cpu_mul(n, y, bottom[k]->data(), y);
        break;
      case EltwiseParameter::SUM:
        cpu_scale(n, coeff_[0], bottom[0]->data(), y);
        for (size_t k = 1; k < bottom.size(); ++k) cpu_axpy(n, coeff_[k], bottom[k]->data(), y);
        break;
      case EltwiseParameter::MAX: {
        float* mask = mask_->data();  // index of the winning bottom, stored as a float
        cpu_copy(n, bottom[0]->data(), y);
        cpu_set(n, 0.0f, mask);
        for (size_t k = 1; k < bottom.size(); ++k) {
          const float* x = bottom[k]->data();
          for (int64_t i = 0; i < n; ++i)
            if (x[i] > y[i]) {
              y[i] = x[i];
              mask[i] = static_cast<float>(k);
            }
        }
        break;
      }
    }
  }

  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    const int64_t n = top[0]->count();
    const float* dy = top[0]->diff();
    for (size_t k = 0; k < bottom.size(); ++k) {
      if (!propagate_down[k]) continue;
      float* dx = bottom[k]->diff();
      switch (op_) {
        case EltwiseParameter::PROD:
          if (param_.eltwise_param().stable_prod_grad()) {
            cpu_copy(n, dy, dx);
            for (size_t j = 0; j < bottom.size(); ++j)
              if (j != k) cpu_mul(n, dx, bottom[j]->data(), dx);
          } else {
            cpu_div(n, top[0]->data(), bottom[k]->data(), dx);
            cpu_mul(n, dx, dy, dx);
          }
          break;
        case EltwiseParameter::SUM:
          cpu_scale(n, coeff_[k], dy, dx);
          break;
        case EltwiseParameter::MAX: {
          const float* mask = mask_->data();
          const float me = static_cast<float>(k);
          for (int64_t i = 0; i < n; ++i) dx[i] = mask[i] == me ? dy[i] : 0.0f;
          break;
        }
      }
    }
  }

  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    const int64_t n = top[0]->count();
    float* y = top[0]->data();
    switch (op_) {
      case EltwiseParameter::PROD:
        gpu_mul(ctx_, n, bottom[0]->data(), bottom[1]->data(), y);
        for (size_t k = 2; k < bottom.size(); ++k) gpu_mul(ctx_, n, y, bottom[k]->data(), y);
        break;
      case EltwiseParameter::SUM:
        gpu_scale(ctx_, n, coeff_[0], bottom[0]->data(), y);
        for (size_t k = 1; k < bottom.size(); ++k) gpu_axpy(ctx_, n, coeff_[k], bottom[k]->data(), y);
        break;
      case EltwiseParameter::MAX:
        gpu_copy(ctx_, n, bottom[0]->data(), y);
        gpu_set(ctx_, n, 0.0f, mask_->data());
        for (size_t k = 1; k < bottom.size(); ++k)
          EltwiseMaxStepGpu(ctx_, n, bottom[k]->data(), static_cast<int>(k), y, mask_->data());
        break;
    }
  }

  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    const int64_t n = top[0]->count();
    const float* dy = top[0]->diff();
    for (size_t k = 0; k < bottom.size(); ++k) {
      if (!propagate_down[k]) continue;
      float* dx = bottom[k]->diff();
      switch (op_) {
        case EltwiseParameter::PROD:
          if (param_.eltwise_param().stable_prod_grad()) {
            gpu_copy(ctx_, n, dy, dx);
            for (size_t j = 0; j < bottom.size(); ++j)
              if (j != k) gpu_mul(ctx_, n, dx, bottom[j]->data(), dx);
          } else {
            gpu_div(ctx_, n, top[0]->data(), bottom[k]->data(), dx);
            gpu_mul(ctx_, n, dx, dy, dx);
          }
          break;
        case EltwiseParameter::SUM:
          gpu_scale(ctx_, n, coeff_[k], dy, dx);
          break;
        case EltwiseParameter::MAX:
          EltwiseMaxBackwardGpu(ctx_, n, mask_->data(), static_cast<int>(k), dy, dx);
          break;
      }
    }
  }

 private:
  EltwiseParameter::EltwiseOp op_ = EltwiseParameter::SUM;
  std::vector<float> coeff_;  // one per bottom
  Blob* mask_ = nullptr;      // MAX only
};

CORTADO_REGISTER_LAYER(Eltwise, EltwiseLayer);

}  // namespace cortado
