// mvn.cpp — MVN: mean-variance normalisation (Caffe's MVNLayer).
// The bottom (at most 4 axes, read as Caffe's num × channels × height × width) is split into rows:
// one per (num, channel) of height·width values, or one per num of channels·height·width values
// with across_channels. Per row of dim values:
//   mean = Σx / dim,  y = x − mean;
//   normalize_variance (default true): s = sqrt(Σ(x − mean)² / dim) + eps (eps default 1e-9), y /= s.
// Backward, exactly Caffe's formula:
//   normalize_variance: dx = (dy − (Σ(y·dy)·y + Σdy) / dim) / s;  otherwise dx = dy − Σdy / dim.
// (Caffe's gradient treats s + eps as s, which differs from the exact one by a factor of order eps.)
// The top has Caffe's legacy 4-D shape (num, channels, height, width): a 2-D bottom (N, C) gives
// (N, C, 1, 1), as in Caffe. In place is allowed. Sums run in double on both devices.
// The arithmetic is mvn_math.hpp's, shared by both devices: the row sums by RowSums (row_sums.hpp: in
// order per row on the CPU, in chunks on the GPU, whose scratch is a workspace), the element-wise steps
// by MapChannels over the rows.
#include "cortado/error.hpp"
#include "cortado/layer_registry.hpp"
#include "mvn_math.hpp"
#include "row_sums.hpp"

namespace cortado {

class MVNLayer : public EitherDevice<Layer> {
 public:
  using EitherDevice::EitherDevice;
  const char* type() const override { return "MVN"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }
  bool BackwardReadsBottomData(int) const override { return false; }
  bool BackwardReadsTopData(int) const override { return normalize_variance_; }  // y, for Σ(y·dy)
  bool InPlaceSafe() const override { return true; }

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override {
    const MVNParameter& p = param_.mvn_param();
    normalize_variance_ = p.normalize_variance();
    across_channels_ = p.across_channels();
    eps_ = p.eps();
    scale_ = AddStepScratch();
    stats_ = AddCallScratch();
    if (ctx_.device() == Device::kGPU) partials_ = AddWorkspace();
  }

  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    const Blob& x = *bottom[0];
    CORTADO_REQUIRE(x.num_axes() <= 4, Describe(), ": takes a bottom of at most 4 axes (num, channels, height, ",
                    "width), got ", x.shape_string());
    rows_ = across_channels_ ? x.num() : static_cast<int64_t>(x.num()) * x.channels();
    dim_ = rows_ > 0 ? x.count() / rows_ : 0;
    top[0]->Reshape(std::vector<int>{x.num(), x.channels(), x.height(), x.width()});
    scale_->Reshape(std::vector<int>{static_cast<int>(rows_)});
    stats_->Reshape(std::vector<int>{static_cast<int>(2 * rows_)});
    if (partials_) partials_->Reshape(std::vector<int>{RowSumScratchFloats(rows_, mvn::GradSums::kSums)});
  }

 protected:
  void Forward_any(const BlobVec& bottom, const BlobVec& top) override {
    const float* x = bottom[0]->data();
    float* y = top[0]->data();
    float* stats = stats_->data();
    float* partials = partials_ ? partials_->data() : nullptr;
    const ChannelLayout rows = RowLayout(rows_, dim_);
    RowSums(ctx_, rows_, dim_, partials, SumOfValues{x}, mvn::StoreMean{dim_, stats});
    MapChannels(ctx_, rows, mvn::Center{stats}, y, x);
    if (!normalize_variance_) return;
    RowSums(ctx_, rows_, dim_, partials, mvn::SumOfSquares{y}, mvn::StoreScale{dim_, eps_, scale_->data()});
    MapChannels(ctx_, rows, mvn::Normalize{scale_->data()}, y, y);
  }

  void Backward_any(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const float* y = top[0]->data();
    const float* dy = top[0]->diff();
    float* dx = bottom[0]->diff();
    float* stats = stats_->data();
    RowSums(ctx_, rows_, dim_, partials_ ? partials_->data() : nullptr, mvn::GradSums{normalize_variance_, y, dy},
            mvn::StoreGradSums{normalize_variance_, dim_, stats});
    const ChannelLayout rows = RowLayout(rows_, dim_);
    if (normalize_variance_) {
      const float inv_dim = static_cast<float>(1.0 / dim_);
      MapChannels(ctx_, rows, mvn::NormalizedGrad{inv_dim, stats, scale_->data()}, dx, dy, y);
    } else {  // y is not read
      MapChannels(ctx_, rows, mvn::CenteredGrad{stats}, dx, dy);
    }
  }

 private:
  bool normalize_variance_ = true, across_channels_ = false;
  float eps_ = 1e-9f;
  int64_t rows_ = 0, dim_ = 0;
  Blob* scale_ = nullptr;     // per row: sqrt(variance) + eps, kept for Backward
  Blob* stats_ = nullptr;     // per row, within a call: 2 floats (mvn_math.hpp)
  Blob* partials_ = nullptr;  // GPU: the row sums' chunk partials
};

CORTADO_REGISTER_LAYER(MVN, MVNLayer);

}  // namespace cortado
