// deconvolution.cpp — Deconvolution (2-D, grouped, dilated; "transposed convolution"), Caffe's
// semantics: the adjoint of Convolution with the same ConvolutionParameter.
//
// Bottom (N, C, H, W) → top (N, M, OH, OW) with M = num_output and
//   OH = stride_h·(H − 1) + dilation_h·(kernel_h − 1) + 1 − 2·pad_h   (OW likewise)
// Weights (C, M/G, kernel_h, kernel_w) — Caffe's order for Deconvolution, input channels first —
// and bias (M). The convolution that takes a (M, OH, OW) image to (C, H, W) with these weights is
// conv; deconvolution is its transpose:
//   y[n][g·M/G + m][ih·s_h − p_h + i·d_h][iw·s_w − p_w + j·d_w]
//       += W[g·C/G + c][m][i][j] · x[n][g·C/G + c][ih][iw]
// for every input position (ih, iw) < (H, W) and tap (i, j) landing inside the top, then + b[m].
// Method (Caffe's, image by image), with conv's column matrix col (M·kh·kw rows, H·W columns,
// im2col.hpp's layout for the geometry {channels M, height OH, width OW}, whose out_h/out_w are H/W):
//   forward   col_g = W_gᵀ · x_g   (per group g: W_g is C/G × (M/G)·kh·kw),  y = col2im(col) + b
//   backward  col = im2col(dy);  dW_g += x_g · col_gᵀ;  dx_g = W_g · col_g;  db[m] += Σ dy[·][m][·]
// Several bottoms may be given (same shape); each gets its own top and shares the weights.
// GPU: the same steps with gpu_gemm and Convolution's im2col/col2im kernels (convolution_gpu.hpp),
// one image's columns in a scratch buffer; engine is ignored (there is no cuDNN path).
#include <glog/logging.h>

#include <cstdint>
#include <string>

#include "conv_geometry.hpp"
#include "convolution_gpu.hpp"  // Im2ColGpu, Col2ImGpu
#include "cortado/error.hpp"
#include "cortado/filler.hpp"
#include "cortado/im2col.hpp"
#include "cortado/kernels/channel_sums.hpp"
#include "cortado/layer_registry.hpp"
#include "cortado/math.hpp"
#include "cortado/math_gpu.hpp"
#include "scale_math.hpp"  // the GPU bias and its gradient's sums

namespace cortado {

class DeconvolutionLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Deconvolution"; }
  int MinBottomBlobs() const override { return 1; }
  int MinTopBlobs() const override { return 1; }
  bool EqualNumBottomTopBlobs() const override { return true; }
  bool BackwardReadsTopData(int) const override { return false; }  // x for dW, never y

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override {
    const ConvSettings s = ReadConvSettings(*this, *bottom[0]);
    geom_ = s.geom;
    num_output_ = s.num_output;
    group_ = s.group;
    channels_ = s.channels;
    bias_term_ = s.bias_term;
    blobs_.push_back(std::make_shared<Blob>(
        std::vector<int>{channels_, num_output_ / group_, geom_.kernel_h, geom_.kernel_w}));
    if (bias_term_) blobs_.push_back(std::make_shared<Blob>(std::vector<int>{num_output_}));
    col_ = AddStepScratch();
    if (ctx_.device() == Device::kGPU && bias_term_) bias_sums_ = AddWorkspace();
  }

  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    const Blob& x = *bottom[0];
    for (size_t i = 1; i < bottom.size(); ++i)
      CORTADO_REQUIRE(bottom[i]->shape() == x.shape(), Describe(), ": all bottoms must have the same shape, but "
                      "bottom 0 is ", x.shape_string(), " and bottom ", i, " is ", bottom[i]->shape_string());
    CORTADO_REQUIRE(x.num_axes() == 4 && x.shape(1) == channels_, Describe(), ": expects a 4-D bottom with ",
                    channels_, " channels, got ", x.shape_string());
    num_ = x.shape(0);
    height_ = x.shape(2);
    width_ = x.shape(3);
    // The convolution this layer is the transpose of: from the top's (M, OH, OW) to the bottom's (H, W).
    geom_.channels = num_output_;
    geom_.height = OutputSize("height", height_, geom_.kernel_h, geom_.pad_h, geom_.stride_h, geom_.extent_h());
    geom_.width = OutputSize("width", width_, geom_.kernel_w, geom_.pad_w, geom_.stride_w, geom_.extent_w());
    CHECK(geom_.out_h() == height_ && geom_.out_w() == width_) << Describe() << ": geometry does not invert";
    for (Blob* y : top) y->Reshape({num_, num_output_, geom_.height, geom_.width});
    const int64_t col_floats = geom_.col_rows() * geom_.out_size();
    CHECK_LE(col_floats, int64_t{INT32_MAX}) << Describe() << ": column buffer too large";
    col_->Reshape(std::vector<int>{static_cast<int>(col_floats)});
    if (bias_sums_)  // the bias gradient's chunked channel sums (kernels/channel_sums.hpp)
      bias_sums_->Reshape(
          std::vector<int>{ChannelSumScratchFloats(num_, num_output_, int64_t{geom_.height} * geom_.width, 1)});
  }

  void InitParams() override {
    const ConvolutionParameter& p = param_.convolution_param();
    FillBlob(p.weight_filler(), blobs_[0].get(), ctx_.rng());
    if (bias_term_) FillBlob(p.bias_filler(), blobs_[1].get(), ctx_.rng());
  }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const Sizes z = GemmSizes();
    const float* w = blobs_[0]->data();
    float* col = col_->data();
    for (size_t i = 0; i < bottom.size(); ++i) {
      for (int n = 0; n < num_; ++n) {
        const float* x = bottom[i]->data() + n * InputFloats();
        for (int g = 0; g < group_; ++g)  // col_g = W_gᵀ · x_g
          cpu_gemm(Trans::kYes, Trans::kNo, z.kg, z.hw, z.cg, 1.0f, w + int64_t{g} * z.cg * z.kg,
                   x + int64_t{g} * z.cg * z.hw, 0.0f, col + int64_t{g} * z.kg * z.hw);
        float* y = top[i]->data() + n * OutputFloats();
        Col2Im(col, 1, geom_, y);
        if (bias_term_) {
          const float* b = blobs_[1]->data();
          const int64_t plane = static_cast<int64_t>(geom_.height) * geom_.width;
          for (int m = 0; m < num_output_; ++m)
            for (int64_t q = 0; q < plane; ++q) y[m * plane + q] += b[m];
        }
      }
    }
  }

  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    const Sizes z = GemmSizes();
    const float* w = blobs_[0]->data();
    float* dw = param_propagate_down(0) ? blobs_[0]->diff() : nullptr;
    float* db = bias_term_ && param_propagate_down(1) ? blobs_[1]->diff() : nullptr;
    float* col = col_->data();
    const int64_t plane = static_cast<int64_t>(geom_.height) * geom_.width;
    for (size_t i = 0; i < top.size(); ++i) {
      float* dx = propagate_down[i] ? bottom[i]->diff() : nullptr;
      for (int n = 0; n < num_; ++n) {
        const float* dy = top[i]->diff() + n * OutputFloats();
        if (db)
          for (int m = 0; m < num_output_; ++m) {
            double sum = 0;
            for (int64_t q = 0; q < plane; ++q) sum += dy[m * plane + q];
            db[m] += static_cast<float>(sum);
          }
        if (!dw && !dx) continue;
        Im2Col(dy, 1, geom_, col);
        const float* x = bottom[i]->data() + n * InputFloats();
        for (int g = 0; g < group_; ++g) {
          if (dw)  // dW_g += x_g · col_gᵀ
            cpu_gemm(Trans::kNo, Trans::kYes, z.cg, z.kg, z.hw, 1.0f, x + int64_t{g} * z.cg * z.hw,
                     col + int64_t{g} * z.kg * z.hw, 1.0f, dw + int64_t{g} * z.cg * z.kg);
          if (dx)  // dx_g = W_g · col_g
            cpu_gemm(Trans::kNo, Trans::kNo, z.cg, z.hw, z.kg, 1.0f, w + int64_t{g} * z.cg * z.kg,
                     col + int64_t{g} * z.kg * z.hw, 0.0f, dx + n * InputFloats() + int64_t{g} * z.cg * z.hw);
        }
      }
    }
  }

  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    const Sizes z = GemmSizes();
    const float* w = blobs_[0]->data();
    float* col = col_->data();
    for (size_t i = 0; i < bottom.size(); ++i) {
      for (int n = 0; n < num_; ++n) {
        const float* x = bottom[i]->data() + n * InputFloats();
        for (int g = 0; g < group_; ++g)
          gpu_gemm(ctx_, Trans::kYes, Trans::kNo, z.kg, z.hw, z.cg, 1.0f, w + int64_t{g} * z.cg * z.kg,
                   x + int64_t{g} * z.cg * z.hw, 0.0f, col + int64_t{g} * z.kg * z.hw);
        Col2ImGpu(ctx_, col, geom_, top[i]->data() + n * OutputFloats());
      }
      if (bias_term_)
        scale::AddBias(ctx_, {num_, num_output_, int64_t{geom_.height} * geom_.width}, DataType::kFloat,
                       blobs_[1]->data(), top[i]->raw_data());
    }
  }

  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    const Sizes z = GemmSizes();
    const float* w = blobs_[0]->data();
    float* dw = param_propagate_down(0) ? blobs_[0]->diff() : nullptr;
    float* db = bias_term_ && param_propagate_down(1) ? blobs_[1]->diff() : nullptr;
    float* col = col_->data();
    for (size_t i = 0; i < top.size(); ++i) {
      float* dx = propagate_down[i] ? bottom[i]->diff() : nullptr;
      if (db)
        scale::AddBiasGradient(ctx_, {num_, num_output_, int64_t{geom_.height} * geom_.width}, bias_sums_->data(),
                               DataType::kFloat, top[i]->diff(), db);
      if (!dw && !dx) continue;
      for (int n = 0; n < num_; ++n) {
        Im2ColGpu(ctx_, top[i]->diff() + n * OutputFloats(), geom_, col);
        const float* x = bottom[i]->data() + n * InputFloats();
        for (int g = 0; g < group_; ++g) {
          if (dw)
            gpu_gemm(ctx_, Trans::kNo, Trans::kYes, z.cg, z.kg, z.hw, 1.0f, x + int64_t{g} * z.cg * z.hw,
                     col + int64_t{g} * z.kg * z.hw, 1.0f, dw + int64_t{g} * z.cg * z.kg);
          if (dx)
            gpu_gemm(ctx_, Trans::kNo, Trans::kNo, z.cg, z.hw, z.kg, 1.0f, w + int64_t{g} * z.cg * z.kg,
                     col + int64_t{g} * z.kg * z.hw, 0.0f, dx + n * InputFloats() + int64_t{g} * z.cg * z.hw);
        }
      }
    }
  }

 private:
  // One image's products: bottom positions H·W, bottom channels per group, column rows per group.
  struct Sizes {
    int hw, cg, kg;
  };
  Sizes GemmSizes() const {
    return {height_ * width_, channels_ / group_, static_cast<int>(geom_.col_rows() / group_)};
  }
  int64_t InputFloats() const { return static_cast<int64_t>(channels_) * height_ * width_; }
  int64_t OutputFloats() const { return static_cast<int64_t>(num_output_) * geom_.height * geom_.width; }

  int OutputSize(const char* axis, int size, int kernel, int pad, int stride, int extent) const {
    const int64_t out = int64_t{stride} * (size - 1) + extent - 2 * int64_t{pad};
    CORTADO_REQUIRE(out >= 1, Describe(), ": the output ", axis, " stride·(", size, " − 1) + ", extent,
                    extent != kernel ? " (dilated kernel extent)" : " (kernel)", " − 2·pad ", pad, " = ", out,
                    " is not positive");
    CHECK_LE(out, int64_t{INT32_MAX}) << Describe() << ": output too large";
    return static_cast<int>(out);
  }

  ConvGeometry geom_;  // the transposed convolution's: channels M, height OH, width OW
  int num_output_ = 0, group_ = 1, channels_ = 0;
  bool bias_term_ = true;
  int num_ = 0, height_ = 0, width_ = 0;  // the bottom's
  Blob* col_ = nullptr;                   // one image's columns
  Blob* bias_sums_ = nullptr;             // GPU: the bias gradient's partial sums (a workspace)
};

CORTADO_REGISTER_LAYER(Deconvolution, DeconvolutionLayer);

}  // namespace cortado
