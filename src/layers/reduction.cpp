// reduction.cpp — Reduction (Caffe's ReductionLayer): reduces every axis from reduction_param.axis
// (default 0; negative counts from the end) on, so the top's shape is the bottom's dims before the
// axis (axis 0: a scalar). For each of the num = Π dims-before-axis rows of dim values x_j:
//   SUM: y = coeff·Σ x_j   ASUM: y = coeff·Σ |x_j|   SUMSQ: y = coeff·Σ x_j²   MEAN: y = coeff·Σ x_j / dim
// (coeff default 1; sums in double). Backward: dx_j = coeff·dy · (1 | sign(x_j) | 2x_j | 1/dim), with
// sign(0) = 0 as Caffe's caffe_sign.
// GPU: a block reduction per row and an element-wise backward (cuda/shape_ops.cu).
#include <cmath>

#include "cortado/error.hpp"
#include "cortado/kernels/shape_ops.hpp"
#include "cortado/layer_registry.hpp"

namespace cortado {

class ReductionLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Reduction"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }
  bool BackwardReadsBottomData(int) const override {  // x for ASUM's sign and SUMSQ's 2x
    const auto op = param_.reduction_param().operation();
    return op == ReductionParameter::ASUM || op == ReductionParameter::SUMSQ;
  }
  bool BackwardReadsTopData(int) const override { return false; }

  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    const ReductionParameter& p = param_.reduction_param();
    const Blob& b = *bottom[0];
    const int n = b.num_axes();
    CORTADO_REQUIRE(p.axis() >= -n && p.axis() < std::max(n, 1), Describe(), ": reduction_param.axis ", p.axis(),
                    " is out of range for bottom shape ", b.shape_string());
    const int axis = p.axis() < 0 ? p.axis() + n : p.axis();
    top[0]->Reshape(std::vector<int>(b.shape().begin(), b.shape().begin() + std::min(axis, n)));
    num_ = b.count(0, std::min(axis, n));
    dim_ = b.count(std::min(axis, n));
    op_ = p.operation();
    coeff_ = p.coeff();
    if (op_ == ReductionParameter::MEAN) coeff_ /= static_cast<float>(dim_);
  }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const float* x = bottom[0]->data();
    float* y = top[0]->data();
    for (int64_t i = 0; i < num_; ++i) {
      const float* row = x + i * dim_;
      double sum = 0;
      for (int64_t j = 0; j < dim_; ++j) {
        const double v = row[j];
        sum += op_ == ReductionParameter::ASUM ? std::fabs(v) : op_ == ReductionParameter::SUMSQ ? v * v : v;
      }
      y[i] = static_cast<float>(coeff_ * sum);
    }
  }

  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const float* x = bottom[0]->data();
    const float* dy = top[0]->diff();
    float* dx = bottom[0]->diff();
    for (int64_t i = 0; i < num_; ++i) {
      const float g = coeff_ * dy[i];
      for (int64_t j = i * dim_; j < (i + 1) * dim_; ++j) {
        dx[j] = op_ == ReductionParameter::ASUM    ? g * static_cast<float>((0 < x[j]) - (x[j] < 0))
                : op_ == ReductionParameter::SUMSQ ? g * 2 * x[j]
                                                   : g;  // SUM, MEAN: x is not read
      }
    }
  }

  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    ReductionForwardGpu(ctx_, op_, num_, dim_, coeff_, bottom[0]->data(), top[0]->data());
  }

  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    ReductionBackwardGpu(ctx_, op_, num_, dim_, coeff_, bottom[0]->data(), top[0]->diff(), bottom[0]->diff());
  }

 private:
  int op_ = ReductionParameter::SUM;
  int64_t num_ = 1, dim_ = 1;
  float coeff_ = 1;  // MEAN: coeff / dim
};

CORTADO_REGISTER_LAYER(Reduction, ReductionLayer);

}  // namespace cortado
