// softmax.cpp — Softmax along one axis (softmax_param.axis, default 1).
// Bottom and top (outer × C × inner), C = shape(axis): y[c] = e^(x[c] − max) / Σ_k e^(x[k] − max),
// independently for every outer and inner position. Backward: dx = (dy − Σ_c dy·y) · y.
// Subtracting the max keeps exp from overflowing. In place (top == bottom) works too.
// The arithmetic is softmax_math.hpp's (a functor per position, or per run of neighbouring positions on
// the CPU, walking the channels), on either device.
#include "cortado/error.hpp"
#include "cortado/layer_registry.hpp"
#include "softmax_math.hpp"

namespace cortado {

class SoftmaxLayer : public EitherDevice<Layer> {
 public:
  using EitherDevice::EitherDevice;
  const char* type() const override { return "Softmax"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }
  bool BackwardReadsBottomData(int) const override { return false; }  // from y alone
  bool InPlaceSafe() const override { return true; }

  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    const int axis = param_.softmax_param().axis();
    const int n = bottom[0]->num_axes();
    CORTADO_REQUIRE(axis >= -n && axis < n, Describe(), ": softmax_param.axis ", axis,
                    " is out of range for a bottom of shape ", bottom[0]->shape_string());
    axis_ = bottom[0]->CanonicalAxisIndex(axis);
    channels_ = bottom[0]->shape(axis_);
    outer_ = bottom[0]->count(0, axis_);
    inner_ = bottom[0]->count(axis_ + 1);
    top[0]->ReshapeLike(*bottom[0]);
  }

 protected:
  void Forward_any(const BlobVec& bottom, const BlobVec& top) override {
    if (channels_ == 0) return;
    const float* x = bottom[0]->data();
    float* y = top[0]->data();
    softmax::RunPositions(ctx_, outer_, channels_, inner_, [&](auto w) {
      return softmax::Forward<decltype(w)::value>{channels_, inner_, x, y};
    });
  }

  void Backward_any(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override {
    if (!propagate_down[0] || channels_ == 0) return;
    const float* y = top[0]->data();
    const float* dy = top[0]->diff();
    float* dx = bottom[0]->diff();
    softmax::RunPositions(ctx_, outer_, channels_, inner_, [&](auto w) {
      return softmax::Backward<decltype(w)::value>{channels_, inner_, y, dy, dx};
    });
  }

 private:
  int axis_ = 1;
  int64_t channels_ = 0, outer_ = 0, inner_ = 0;
};

CORTADO_REGISTER_LAYER(Softmax, SoftmaxLayer);

}  // namespace cortado
