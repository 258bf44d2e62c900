// eltwise.cpp — Eltwise: combines bottoms of one shape element by element.
//   SUM (default): y = Σ_k c_k·x_k, coeff c_k (one per bottom, default 1); dx_k = c_k·dy.
//   PROD: y = Π_k x_k; dx_k = dy·Π_{j≠k} x_j (stable_prod_grad, the default) or dy·y/x_k.
//   MAX:  y = max_k x_k; the winning bottom per element (the first on ties) is kept in a scratch
//         mask, and dx_k = dy where bottom k won, else 0.
// Every step is a functor (kernels/arithmetic.hpp's, eltwise_math.hpp's) run on either device.
#include "cortado/error.hpp"
#include "cortado/kernels/arithmetic.hpp"
#include "cortado/layer_registry.hpp"
#include "cortado/math_gpu.hpp"  // copy_on
#include "eltwise_math.hpp"

namespace cortado {

class EltwiseLayer : public EitherDevice<Layer> {
 public:
  using EitherDevice::EitherDevice;
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
  void Forward_any(const BlobVec& bottom, const BlobVec& top) override {
    const int64_t n = top[0]->count();
    if (op_ == EltwiseParameter::SUM) {
      const DataType type = top[0]->data_type();
      void* y = top[0]->raw_data();
      MapStored(ctx_, n, arithmetic::Scaled{coeff_[0]}, type, y, static_cast<const void*>(bottom[0]->raw_data()));
      for (size_t k = 1; k < bottom.size(); ++k)
        MapStored(ctx_, n, eltwise::AddScaled{coeff_[k]}, type, y, static_cast<const void*>(bottom[k]->raw_data()),
                  static_cast<const void*>(y));
      return;
    }
    float* y = top[0]->data();
    switch (op_) {
      case EltwiseParameter::PROD:
        Map(ctx_, n, arithmetic::Product{}, y, bottom[0]->data(), bottom[1]->data());
        for (size_t k = 2; k < bottom.size(); ++k) Map(ctx_, n, arithmetic::Product{}, y, y, bottom[k]->data());
        break;
      case EltwiseParameter::SUM:  // float or 16-bit storage (MapStored): the net's plan gives SUM either
        break;
      case EltwiseParameter::MAX: {
        float* mask = mask_->data();  // index of the winning bottom, stored as a float
        copy_on(ctx_, n, bottom[0]->data(), y);
        Map(ctx_, n, arithmetic::Constant{0.0f}, mask);
        for (size_t k = 1; k < bottom.size(); ++k)
          ForEach(ctx_, n, eltwise::MaxStep{static_cast<float>(k), bottom[k]->data(), y, mask});
        break;
      }
    }
  }

  void Backward_any(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override {
    const int64_t n = top[0]->count();
    if (op_ == EltwiseParameter::SUM) {  // dx_k = c_k·dy, in the blobs' storage type
      for (size_t k = 0; k < bottom.size(); ++k)
        if (propagate_down[k])
          MapStored(ctx_, n, arithmetic::Scaled{coeff_[k]}, bottom[k]->diff_type(), bottom[k]->raw_diff(),
                    static_cast<const void*>(top[0]->raw_diff()));
      return;
    }
    const float* dy = top[0]->diff();
    for (size_t k = 0; k < bottom.size(); ++k) {
      if (!propagate_down[k]) continue;
      float* dx = bottom[k]->diff();
      switch (op_) {
        case EltwiseParameter::PROD:
          if (param_.eltwise_param().stable_prod_grad()) {
            copy_on(ctx_, n, dy, dx);
            for (size_t j = 0; j < bottom.size(); ++j)
              if (j != k) Map(ctx_, n, arithmetic::Product{}, dx, dx, bottom[j]->data());
          } else {
            Map(ctx_, n, arithmetic::Quotient{}, dx, top[0]->data(), bottom[k]->data());
            Map(ctx_, n, arithmetic::Product{}, dx, dx, dy);
          }
          break;
        case EltwiseParameter::SUM:  // above
          break;
        case EltwiseParameter::MAX:
          Map(ctx_, n, eltwise::MaxBackward{static_cast<float>(k)}, dx, mask_->data(), dy);
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
