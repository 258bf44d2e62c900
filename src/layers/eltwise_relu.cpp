// eltwise_relu.cpp — Eltwise SUM of two bottoms with a ReLU in place on the sum (a ResNet block's end),
// run as one layer (fusion.hpp): one pass forward instead of the sum's two and the ReLU's one; backward
// one pass per bottom, each reading y and dy, instead of the ReLU's pass and the sum's copies. The
// arithmetic is eltwise_math.hpp's SumReLU and SumReLUBackward, on either device, over float or 16-bit
// storage (MapStored: the chain's blobs share one type).
#include <glog/logging.h>

#include "eltwise_math.hpp"
#include "fusion.hpp"

namespace cortado {

namespace {

class EltwiseReLULayer : public EitherDevice<Layer> {
 public:
  EltwiseReLULayer(const LayerParameter& param, Context& ctx, float c0, float c1, float slope)
      : EitherDevice(param, ctx), c0_(c0), c1_(c1), slope_(slope) {}
  const char* type() const override { return "EltwiseReLU"; }
  void Reshape(const BlobVec&, const BlobVec&) override {}  // the chain's layers are shaped

 protected:
  void Forward_any(const BlobVec& bottom, const BlobVec& top) override {
    MapStored(ctx_, top[0]->count(), eltwise::SumReLU{c0_, c1_, slope_}, top[0]->data_type(), top[0]->raw_data(),
              static_cast<const void*>(bottom[0]->raw_data()), static_cast<const void*>(bottom[1]->raw_data()));
  }

  void Backward_any(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override {
    const float coeff[2] = {c0_, c1_};
    for (int k = 0; k < 2; ++k)
      if (propagate_down[k])
        MapStored(ctx_, top[0]->count(), eltwise::SumReLUBackward{coeff[k], slope_}, top[0]->data_type(),
                  bottom[k]->raw_diff(), static_cast<const void*>(top[0]->raw_data()),
                  static_cast<const void*>(top[0]->raw_diff()));
  }

 private:
  float c0_, c1_, slope_;
};

}  // namespace

std::unique_ptr<Layer> MakeEltwiseReLU(Context& ctx, Layer& eltwise, Layer& relu) {
  const EltwiseParameter& p = eltwise.layer_param().eltwise_param();
  CHECK(p.operation() == EltwiseParameter::SUM && std::string(relu.type()) == "ReLU") << "MakeEltwiseReLU: not a chain";
  const float slope = relu.layer_param().relu_param().negative_slope();
  CHECK(slope >= 0.0f) << "MakeEltwiseReLU: a ReLU with a negative slope";
  LayerParameter param;
  param.set_name(eltwise.name() + "+" + relu.name());
  param.set_type("EltwiseReLU");
  param.set_phase(eltwise.phase());
  return std::make_unique<EltwiseReLULayer>(param, ctx, p.coeff_size() > 0 ? p.coeff(0) : 1.0f,
                                            p.coeff_size() > 1 ? p.coeff(1) : 1.0f, slope);
}

}  // namespace cortado
