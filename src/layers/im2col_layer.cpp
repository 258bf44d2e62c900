// im2col_layer.cpp — Im2col: the column matrix of each image, as Caffe's Im2col layer (the unrolling a
// Convolution does before its matrix product), with col2im, its adjoint, for the gradient.
//
// convolution_param: kernel_size (or kernel_h and kernel_w), pad (or pad_h/pad_w; default 0), stride (or
// stride_h and stride_w; default 1), dilation (default 1), each repeated field one value for every
// spatial axis or one per axis; axis, the channel axis (default 1; negative counts from the end). The
// axes after it are spatial: 2 of them, or 1 (unrolled as images of height 1); cortado/im2col.hpp has
// no N-d unrolling. force_nd_im2col is accepted and changes nothing: the columns are the same.
//
// Bottom (A…, C, H, W) → top (A…, C·kh·kw, OH, OW) with
//   OH = (H + 2·pad_h − (dilation_h·(kh − 1) + 1)) / stride_h + 1   (floored; OW likewise)
//   top[a][(c·kh + i)·kw + j][oh][ow] =
//       bottom[a][c][oh·stride_h − pad_h + i·dilation_h][ow·stride_w − pad_w + j·dilation_w]
// (0 where that falls in the padding), for each image a of the leading axes A…: Im2Col (Im2ColGpu on a
// GPU net) with the Convolution layer's layout. Backward: Col2Im, each bottom element's gradient the
// sum of the top gradients of the column entries copied from it. Shapes follow the bottom on Reshape.
#include <climits>
#include <cstdint>
#include <string>
#include <vector>

#include "convolution_gpu.hpp"  // Im2ColGpu, Col2ImGpu
#include "cortado/error.hpp"
#include "cortado/gpu.hpp"       // BuiltWithCuda
#include "cortado/im2col.hpp"    // ConvGeometry, Im2Col, Col2Im
#include "cortado/layer_registry.hpp"

namespace cortado {

namespace {

using Repeated = google::protobuf::RepeatedField<uint32_t>;

class Im2colLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Im2col"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }
  bool BackwardReadsBottomData(int) const override { return false; }
  bool BackwardReadsTopData(int) const override { return false; }

  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    const Blob& x = *bottom[0];
    ReadGeometry(x);
    std::vector<int> shape(x.shape().begin(), x.shape().begin() + axis_);
    const int64_t taps = int64_t{geom_.kernel_h} * geom_.kernel_w;
    CORTADO_REQUIRE(geom_.channels <= INT32_MAX / taps, Describe(), ": ", geom_.channels, " channels × a kernel of ",
                    taps, " make too many top channels for a blob");
    shape.push_back(static_cast<int>(geom_.col_rows()));
    if (spatial_axes_ == 2) shape.push_back(geom_.out_h());
    shape.push_back(geom_.out_w());
    top[0]->Reshape(shape);
    num_ = x.count(0, axis_);
  }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const float* x = bottom[0]->data();
    float* y = top[0]->data();
#pragma omp parallel for schedule(static) if (num_ > 1)
    for (int64_t a = 0; a < num_; ++a) Im2Col(x + a * ImageFloats(), 1, geom_, y + a * ColumnFloats());
  }
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const float* dy = top[0]->diff();
    float* dx = bottom[0]->diff();
#pragma omp parallel for schedule(static) if (num_ > 1)
    for (int64_t a = 0; a < num_; ++a) Col2Im(dy + a * ColumnFloats(), 1, geom_, dx + a * ImageFloats());
  }
  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    for (int64_t a = 0; a < num_; ++a)
      Im2ColGpu(ctx_, bottom[0]->data() + a * ImageFloats(), geom_, top[0]->data() + a * ColumnFloats());
  }
  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    for (int64_t a = 0; a < num_; ++a)
      Col2ImGpu(ctx_, top[0]->diff() + a * ColumnFloats(), geom_, bottom[0]->diff() + a * ImageFloats());
  }

 private:
  int64_t ImageFloats() const { return static_cast<int64_t>(geom_.channels) * geom_.height * geom_.width; }
  int64_t ColumnFloats() const { return geom_.col_rows() * geom_.out_size(); }

  // convolution_param against bottom x: sets axis_, spatial_axes_ and geom_ (1-D: height 1, kernel 1).
  void ReadGeometry(const Blob& x) {
    const ConvolutionParameter& p = param_.convolution_param();
    const int n = x.num_axes();
    CORTADO_REQUIRE(p.axis() >= -n && p.axis() < n, Describe(), ": axis ", p.axis(),
                    " is out of range for bottom shape ", x.shape_string());
    axis_ = x.CanonicalAxisIndex(p.axis());
    spatial_axes_ = n - axis_ - 1;
    CORTADO_REQUIRE(spatial_axes_ == 1 || spatial_axes_ == 2, Describe(), ": needs 1 or 2 spatial axes after the "
                    "channel axis ", axis_, ", but bottom shape ", x.shape_string(), " has ", spatial_axes_);
    CORTADO_REQUIRE(p.kernel_size_size() > 0 || p.has_kernel_h() || p.has_kernel_w(), Describe(),
                    ": kernel_size (or kernel_h and kernel_w) is required");
    const std::vector<int> kernel = Field("kernel_size", "kernel", p.kernel_size(), p.has_kernel_h(), p.kernel_h(),
                                          p.has_kernel_w(), p.kernel_w(), 0, true);
    const std::vector<int> pad =
        Field("pad", "pad", p.pad(), p.has_pad_h(), p.pad_h(), p.has_pad_w(), p.pad_w(), 0, false);
    const std::vector<int> stride = Field("stride", "stride", p.stride(), p.has_stride_h(), p.stride_h(),
                                          p.has_stride_w(), p.stride_w(), 1, true);
    const std::vector<int> dilation = Field("dilation", "dilation", p.dilation(), false, 0, false, 0, 1, false);
    geom_ = ConvGeometry();
    geom_.channels = x.shape(axis_);
    const size_t w = spatial_axes_ - 1;  // index of the width in the per-axis values
    for (size_t d = 0; d < kernel.size(); ++d) {
      const char* name = d == w ? "width" : "height";
      CORTADO_REQUIRE(kernel[d] > 0 && stride[d] > 0 && dilation[d] > 0, Describe(), ": kernel_size, stride and "
                      "dilation must be positive, but the ", name, "'s are ", kernel[d], ", ", stride[d], " and ",
                      dilation[d]);
      const int size = x.shape(axis_ + 1 + static_cast<int>(d));
      const int64_t extent = int64_t{dilation[d]} * (kernel[d] - 1) + 1, padded = size + 2 * int64_t{pad[d]};
      CORTADO_REQUIRE(extent <= padded, Describe(), ": the kernel ", name, " ", kernel[d],
                      dilation[d] > 1 ? " (dilated extent " + std::to_string(extent) + ")" : std::string(),
                      " is larger than the padded input ", name, " ", padded, " (", size, " + 2·pad ", pad[d],
                      ") of bottom shape ", x.shape_string());
      CORTADO_REQUIRE(padded <= INT32_MAX, Describe(), ": the padded input ", name, " ", padded, " is too large");
    }
    geom_.width = x.shape(axis_ + spatial_axes_);
    geom_.kernel_w = kernel[w], geom_.pad_w = pad[w], geom_.stride_w = stride[w], geom_.dilation_w = dilation[w];
    if (spatial_axes_ == 2) {
      geom_.height = x.shape(axis_ + 1);
      geom_.kernel_h = kernel[0], geom_.pad_h = pad[0], geom_.stride_h = stride[0], geom_.dilation_h = dilation[0];
    }
  }

  // One geometry field, one value per spatial axis: its _h/_w form (2 spatial axes only; a missing one
  // is `fallback`, or an error when `both` are required), else its repeated form: none → fallback,
  // one → every axis, or one per axis. Values above 2^31 − 1 are errors.
  std::vector<int> Field(const std::string& repeated_name, const std::string& prefix, const Repeated& values,
                         bool has_h, uint32_t h, bool has_w, uint32_t w, int fallback, bool both) const {
    const std::string h_name = prefix + "_h", w_name = prefix + "_w";
    std::vector<uint32_t> given(static_cast<size_t>(spatial_axes_), static_cast<uint32_t>(fallback));
    if (has_h || has_w) {
      CORTADO_REQUIRE(spatial_axes_ == 2, Describe(), ": ", h_name, " and ", w_name, " are for 2 spatial axes, but "
                      "this bottom has 1; give ", repeated_name);
      CORTADO_REQUIRE(values.empty(), Describe(), ": give ", repeated_name, " or ", h_name, "/", w_name, ", not both");
      CORTADO_REQUIRE(!both || (has_h && has_w), Describe(), ": give both ", h_name, " and ", w_name);
      if (has_h) given[0] = h;
      if (has_w) given[1] = w;
    } else {
      CORTADO_REQUIRE(values.size() <= 1 || values.size() == spatial_axes_, Describe(), ": ", repeated_name,
                      " takes one value or one per spatial axis (", spatial_axes_, "), but has ", values.size());
      for (int d = 0; d < spatial_axes_ && !values.empty(); ++d) given[d] = values.Get(values.size() == 1 ? 0 : d);
    }
    std::vector<int> out;
    for (uint32_t value : given) {
      CORTADO_REQUIRE(value <= INT32_MAX, Describe(), ": ", repeated_name, " ", value, " is too large");
      out.push_back(static_cast<int>(value));
    }
    return out;
  }

  int axis_ = 1;          // the channel axis
  int spatial_axes_ = 2;  // after it: 1 or 2
  ConvGeometry geom_;     // of one image
  int64_t num_ = 0;       // images: the product of the axes before axis_
};

}  // namespace

CORTADO_REGISTER_LAYER(Im2col, Im2colLayer);

}  // namespace cortado
