// reduction.cpp — Reduction (Caffe's ReductionLayer): reduces every axis from reduction_param.axis
// (default 0; negative counts from the end) on, so the top's shape is the bottom's dims before the
// axis (axis 0: a scalar). For each of the num = Π dims-before-axis rows of dim values x_j:
//   SUM: y = coeff·Σ x_j   ASUM: y = coeff·Σ |x_j|   SUMSQ: y = coeff·Σ x_j²   MEAN: y = coeff·Σ x_j / dim
// (coeff default 1; sums in double). Backward: dx_j = coeff·dy · (1 | sign(x_j) | 2x_j | 1/dim), with
// sign(0) = 0 as Caffe's caffe_sign.
// The arithmetic is shape_ops_math.hpp's, shared by both devices: the row sums run by RowSums
// (row_sums.hpp: in order per row on the CPU, in chunks on the GPU, whose scratch is a workspace), the
// backward by MapChannels over the rows.
#include <algorithm>

#include "cortado/error.hpp"
#include "cortado/layer_registry.hpp"
#include "row_sums.hpp"
#include "shape_ops_math.hpp"

namespace cortado {

static_assert(ReductionParameter::ASUM == shape_ops::kReductionAsum &&
                  ReductionParameter::SUMSQ == shape_ops::kReductionSumSq,
              "shape_ops_math.hpp's operation codes");

class ReductionLayer : public EitherDevice<Layer> {
 public:
  using EitherDevice::EitherDevice;
  const char* type() const override { return "Reduction"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }
  bool BackwardReadsBottomData(int) const override {  // x for ASUM's sign and SUMSQ's 2x
    const auto op = param_.reduction_param().operation();
    return op == ReductionParameter::ASUM || op == ReductionParameter::SUMSQ;
  }
  bool BackwardReadsTopData(int) const override { return false; }

  void LayerSetUp(const BlobVec&, const BlobVec&) override {
    if (ctx_.device() == Device::kGPU) partials_ = AddWorkspace();
  }

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
    if (partials_) partials_->Reshape(std::vector<int>{RowSumScratchFloats(num_, 1)});
  }

 protected:
  void Forward_any(const BlobVec& bottom, const BlobVec& top) override {
    RowSums(ctx_, num_, dim_, partials_ ? partials_->data() : nullptr,
            shape_ops::ReductionTerm{op_, bottom[0]->data()}, shape_ops::StoreReduction{coeff_, top[0]->data()});
  }

  void Backward_any(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const ChannelLayout rows = RowLayout(num_, dim_);
    if (op_ == ReductionParameter::ASUM || op_ == ReductionParameter::SUMSQ) {
      MapChannels(ctx_, rows, shape_ops::ReductionBackward{op_, coeff_, top[0]->diff()}, bottom[0]->diff(),
                  bottom[0]->data());
    } else {  // SUM, MEAN: x is not read (the layer says so to the memory plan)
      MapChannels(ctx_, rows, shape_ops::ReductionBackwardConstant{coeff_, top[0]->diff()}, bottom[0]->diff());
    }
  }

 private:
  int op_ = ReductionParameter::SUM;
  int64_t num_ = 1, dim_ = 1;
  float coeff_ = 1;           // MEAN: coeff / dim
  Blob* partials_ = nullptr;  // GPU: the row sums' chunk partials
};

CORTADO_REGISTER_LAYER(Reduction, ReductionLayer);

}  // namespace cortado
