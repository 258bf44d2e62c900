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
// GPU: kernels/zoo.hpp (cuda/mvn.cu), one block per row.
#include <cmath>

#include "cortado/error.hpp"
#include "cortado/kernels/zoo.hpp"
#include "cortado/layer_registry.hpp"

namespace cortado {

class MVNLayer : public Layer {
 public:
  using Layer::Layer;
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
  }

  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    const Blob& x = *bottom[0];
    CORTADO_REQUIRE(x.num_axes() <= 4, Describe(), ": takes a bottom of at most 4 axes (num, channels, height, ",
                    "width), got ", x.shape_string());
    rows_ = across_channels_ ? x.num() : static_cast<int64_t>(x.num()) * x.channels();
    dim_ = rows_ > 0 ? x.count() / rows_ : 0;
    top[0]->Reshape(std::vector<int>{x.num(), x.channels(), x.height(), x.width()});
    scale_->Reshape(std::vector<int>{static_cast<int>(rows_)});
  }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const float* x = bottom[0]->data();
    float* y = top[0]->data();
    float* scale = scale_->data();
    for (int64_t r = 0; r < rows_; ++r) {
      const float* xr = x + r * dim_;
      float* yr = y + r * dim_;
      double sum = 0;
      for (int64_t i = 0; i < dim_; ++i) sum += xr[i];
      const float mean = static_cast<float>(sum / dim_);
      for (int64_t i = 0; i < dim_; ++i) yr[i] = xr[i] - mean;
      if (!normalize_variance_) continue;
      double sq = 0;
      for (int64_t i = 0; i < dim_; ++i) sq += static_cast<double>(yr[i]) * yr[i];
      const float s = std::sqrt(static_cast<float>(sq / dim_)) + eps_;
      scale[r] = s;
      for (int64_t i = 0; i < dim_; ++i) yr[i] /= s;
    }
  }

  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const float* y = top[0]->data();
    const float* dy = top[0]->diff();
    const float* scale = scale_->data();
    float* dx = bottom[0]->diff();
    for (int64_t r = 0; r < rows_; ++r) {
      const float* yr = y + r * dim_;
      const float* dyr = dy + r * dim_;
      float* dxr = dx + r * dim_;
      double sum_dy = 0, sum_ydy = 0;
      for (int64_t i = 0; i < dim_; ++i) {
        sum_dy += dyr[i];
        if (normalize_variance_) sum_ydy += static_cast<double>(yr[i]) * dyr[i];
      }
      if (normalize_variance_) {
        const float a = static_cast<float>(sum_ydy), b = static_cast<float>(sum_dy);
        const float inv_dim = static_cast<float>(1.0 / dim_);
        for (int64_t i = 0; i < dim_; ++i) dxr[i] = (dyr[i] - inv_dim * (a * yr[i] + b)) / scale[r];
      } else {
        const float mean = static_cast<float>(sum_dy / dim_);
        for (int64_t i = 0; i < dim_; ++i) dxr[i] = dyr[i] - mean;
      }
    }
  }

  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    MVNForwardGpu(ctx_, rows_, dim_, normalize_variance_, eps_, bottom[0]->data(), top[0]->data(), scale_->data());
  }

  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    MVNBackwardGpu(ctx_, rows_, dim_, normalize_variance_, top[0]->data(), top[0]->diff(), scale_->data(),
                   bottom[0]->diff());
  }

 private:
  bool normalize_variance_ = true, across_channels_ = false;
  float eps_ = 1e-9f;
  int64_t rows_ = 0, dim_ = 0;
  Blob* scale_ = nullptr;  // per row: sqrt(variance) + eps, kept for Backward
};

CORTADO_REGISTER_LAYER(MVN, MVNLayer);

}  // namespace cortado
