// convolution.cpp — Convolution (2-D, grouped, dilated), Caffe's semantics.
//
// Bottom (N, C, H, W) → top (N, M, OH, OW) with M = num_output and
//   OH = (H + 2·pad_h − (dilation_h·(kernel_h − 1) + 1)) / stride_h + 1   (floored; OW likewise)
//   y[n][m][oh][ow] = b[m] + Σ_{c, i, j} W[m][c][i][j] · x[n][g·C/G + c][oh·s_h − p_h + i·d_h][ow·s_w − p_w + j·d_w]
// where g = m / (M/G) is the output's group. Weights (M, C/G, kernel_h, kernel_w), bias (M).
// Several bottoms may be given (same shape); each gets its own top and shares the weights.
//
// Method: the images of a chunk (about 1 MiB of columns; the whole of a small batch) are unrolled
// side by side into one column matrix col (C·kh·kw rows, chunk·OH·OW columns), so forward, the
// weight gradient and the data gradient are each one sgemm per chunk and group:
//   forward   P = W_g · col_g,   then P (M, chunk, OH·OW) is scattered into y (chunk, M, OH·OW) + b
//   backward  P = dy gathered as (M, chunk·OH·OW);  dW_g += P_g · col_gᵀ;  col_g = W_gᵀ · P_g;  col2im
// Forward keeps every chunk's columns for backward when the batch's columns fit in 64 MiB (with one
// bottom); otherwise backward unrolls each chunk again.
//
// Chunks run in parallel on the CPU threads (OpenMP), each product on its own thread: LeNet's
// products are too small to split further. Each thread has its own product buffer (and
// column buffer when columns are not kept) and its own weight-gradient partial, summed at the end.
//
// CPU engines (cortado/cpu_engine.hpp): the im2col method above, or oneDNN's convolution primitives
// (onednn_engine.hpp) on Cortado's NCHW buffers ("plain") or in the blocked layouts oneDNN's fastest
// code wants ("native", reordered through the net's workspace, which the memory plan counts). With
// the CPU engine auto and the prototxt's engine DEFAULT, the layer's shape is timed with each at
// set-up (cpu_engine_choice.cpp) and the fastest kept; engine CAFFE (or the CPU engine im2col) keeps
// im2col, engine ONEDNN (or the CPU engine onednn) takes oneDNN's native layouts without timing.
//
// GPU (convolution_gpu.hpp): with cuDNN when the build has it and engine is DEFAULT or CUDNN
// (cudnn/convolution_cudnn.cpp: candidates listed when the layer is shaped, timed on its real buffers
// once they are bound (OnMemoryBound), their workspace a buffer of at most the context's
// cudnn_workspace_limit, shared by all layers). cuDNN computes on the bottoms' storage type (float, or
// bf16 and fp16 with float sums) and layout (NCHW or NHWC), reading a copy of the weights made at each
// forward in that type (NHWC: as (K, R, S, C/group)); the 16-bit weight gradient is added into the
// float master's, and the bias and its gradient are the layer's own per-channel kernels (scale_math.hpp)
// over the tops' type and layout. Otherwise (engine CAFFE, or no cuDNN) Caffe's method on float NCHW, image
// by image: im2col into one image's columns (cuda/convolution.cu), one gpu_gemm per group straight
// into the top, the bias added over the whole batch; backward the same way, col2im for the data
// gradient.
#include <glog/logging.h>
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "cortado/cpu_engine.hpp"  // OneDnnEnabled
#include "cortado/error.hpp"
#include "cortado/filler.hpp"
#include "cortado/im2col.hpp"
#include "cortado/kernels/channel_sums.hpp"
#include "cortado/layer_registry.hpp"
#include "cortado/math.hpp"
#include "cortado/math_gpu.hpp"
#include "cast_math.hpp"
#include "channels_last.hpp"
#include "cpu_engine_choice.hpp"
#include "conv_geometry.hpp"
#include "convolution_gpu.hpp"
#include "onednn_engine.hpp"
#include "scale_math.hpp"  // the GPU bias and its gradient's sums

namespace cortado {

namespace {

// Columns per matrix product: about 1 MiB, so a chunk's columns are still in cache when the product
// reads them (measured faster than one product over the whole batch).
constexpr int64_t kChunkFloats = (int64_t{1} << 20) / sizeof(float);
// Forward keeps every chunk's columns for backward when the batch's columns fit in 4 MiB (a small
// net's, where unrolling again would show in the step time); otherwise backward unrolls each chunk
// again, and the columns are a per-call buffer whose memory the plan reuses between calls (ResNet-50
// at batch 8 runs as fast either way, in 0.5 GB less).

constexpr int64_t kKeepFloats = (int64_t{4} << 20) / sizeof(float);

// Σ x[0..n), with eight partial sums so the loop vectorises and is not bound by add latency.
float Sum(const float* x, int64_t n) {
  float part[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) part[k] += x[i + k];
  float sum = 0.0f;
  for (; i < n; ++i) sum += x[i];
  for (float p : part) sum += p;
  return sum;
}

}  // namespace

class ConvolutionLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Convolution"; }
  int MinBottomBlobs() const override { return 1; }
  int MinTopBlobs() const override { return 1; }
  bool EqualNumBottomTopBlobs() const override { return true; }
  bool BackwardReadsTopData(int) const override { return false; }  // x for dW, never y

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override {
    const ConvolutionParameter& p = param_.convolution_param();
    const ConvSettings s = ReadConvSettings(*this, *bottom[0]);
    geom_ = s.geom;
    num_output_ = s.num_output;
    group_ = s.group;
    channels_ = s.channels;
    bias_term_ = s.bias_term;
    blobs_.push_back(std::make_shared<Blob>(
        std::vector<int>{num_output_, channels_ / group_, geom_.kernel_h, geom_.kernel_w}));
    if (bias_term_) blobs_.push_back(std::make_shared<Blob>(std::vector<int>{num_output_}));
    col_ = AddStepScratch();  // keeps the forward's columns for Backward when they are small (Reshape)
    product_ = AddCallScratch();
    dw_partial_ = AddCallScratch();
    // oneDNN's scratchpads and reordered data matter only inside a call: the net's one workspace region.
    if (ctx_.device() == Device::kCPU) onednn_scratch_ = AddWorkspace();
    // 16-bit bottoms (the Net gives them only where ConvolutionComputesOn): oneDNN's bf16 code on the
    // CPU, cuDNN's on the GPU, each reading a copy of the weights made from the float master at each
    // forward (weights_compute_; on the GPU also for NHWC, as cuDNN's NHWC kernels want the weights).
    compute_type_ = bottom[0]->data_type();
    bf16_ = ctx_.device() == Device::kCPU && compute_type_ == DataType::kBFloat16;
    weights_compute_ = AddStepScratch();
    weights_compute_->set_types(compute_type_, compute_type_);
    if (ctx_.device() == Device::kGPU) {
      dw_compute_ = AddCallScratch();
      dw_compute_->set_types(compute_type_, compute_type_);
    }
    if (ctx_.device() == Device::kCPU) RequireOneDnnWhereAsked(p.engine() == ConvolutionParameter::ONEDNN, Describe());
    if (ctx_.device() == Device::kGPU) workspace_ = AddWorkspace();
    if (ctx_.device() == Device::kGPU && p.engine() != ConvolutionParameter::CAFFE) {
      if (BuiltWithCudnn()) {
        if (ctx_.plan_only()) {
          plan_cudnn_ = true;  // no GPU to ask: the plan counts the most workspace cuDNN may take
        } else {
          cudnn_ = CreateCudnnConvolution();
        }
      } else {
        CORTADO_REQUIRE(p.engine() != ConvolutionParameter::CUDNN, Describe(),
                        ": engine CUDNN, but this build has no cuDNN; use engine: CAFFE (or DEFAULT)");
      }
    }
    CORTADO_REQUIRE(compute_type_ == DataType::kFloat || bf16_ || cudnn_ || plan_cudnn_, Describe(), ": ",
                    DataTypeName(compute_type_), " bottoms, which only cuDNN (GPU) and oneDNN (CPU, bf16) "
                    "convolutions read; the Net converts them to float for engine CAFFE");
  }

  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    const Blob& x = *bottom[0];
    for (size_t i = 1; i < bottom.size(); ++i)
      CORTADO_REQUIRE(bottom[i]->shape() == x.shape(), Describe(), ": all bottoms must have the same "
                      "shape, but bottom 0 is ", x.shape_string(), " and bottom ", i, " is ",
                      bottom[i]->shape_string());
    CORTADO_REQUIRE(x.num_axes() == 4 && x.shape(1) == channels_, Describe(), ": expects a 4-D bottom with ",
                    channels_, " channels, got ", x.shape_string());
    geom_.channels = channels_;
    geom_.height = x.shape(2);
    geom_.width = x.shape(3);
    CheckFits("height", geom_.height, geom_.pad_h, geom_.kernel_h, geom_.dilation_h, geom_.extent_h());
    CheckFits("width", geom_.width, geom_.pad_w, geom_.kernel_w, geom_.dilation_w, geom_.extent_w());
    num_ = x.shape(0);
    for (Blob* y : top) y->Reshape({num_, num_output_, geom_.out_h(), geom_.out_w()});
    channels_last_ = bottom[0]->channels_last();
    CORTADO_REQUIRE(!channels_last_ || ctx_.device() == Device::kCPU || cudnn_ || plan_cudnn_, Describe(),
                    ": channels-last input on the GPU without cuDNN (the Net converts it to NCHW for engine CAFFE)");
    SizeLikeWeights(weights_compute_, ReadsWeightCopy());
    col_holds_forward_ = false;
    if (ctx_.device() == Device::kGPU) {
      ReshapeGpuBuffers();
      return;
    }
    // Chunks of about kChunkFloats column floats, balanced; the whole batch's columns are kept for
    // backward when they fit in kKeepFloats.
    const int64_t per_image = std::max<int64_t>(geom_.col_rows() * geom_.out_size(), 1);  // 0 for an empty input
    const int64_t batch = std::max(num_, 1);
    const int64_t max_chunk = std::max<int64_t>(1, std::min<int64_t>(batch, kChunkFloats / per_image));
    const int64_t chunks = (batch + max_chunk - 1) / max_chunk;
    chunk_ = static_cast<int>((batch + chunks - 1) / chunks);
    keep_cols_ = batch * per_image <= kKeepFloats;
    threads_ = static_cast<int>(std::min<int64_t>(omp_get_max_threads(), chunks));
    chunk_product_ = static_cast<int64_t>(chunk_) * num_output_ * geom_.out_size();
    col_floats_ = keep_cols_ ? batch * per_image : threads_ * chunk_ * per_image;
    product_floats_ = threads_ * chunk_product_;
    CHECK_LE(std::max(col_floats_, product_floats_), int64_t{INT32_MAX}) << Describe() << ": column buffer too large";
    ChooseCpuEngine();
    const bool im2col = onednn_ == nullptr;
    col_->Reshape(std::vector<int>{im2col ? static_cast<int>(col_floats_) : 0});
    SetScratchLife(col_, keep_cols_ ? ScratchLife::kForwardToBackward : ScratchLife::kWithinCall);
    product_->Reshape(std::vector<int>{im2col ? static_cast<int>(product_floats_) : 0});
    dw_partial_->Reshape(std::vector<int>{im2col ? static_cast<int>(DwPartialFloats()) : 0});
    const size_t scratch_bytes = im2col ? 0 : OneDnnConvolutionScratchBytes(*onednn_);
    CHECK_LE(scratch_bytes / sizeof(float), size_t{INT32_MAX}) << Describe() << ": oneDNN scratch too large";
    onednn_scratch_->Reshape(std::vector<int>{FloatsFor(scratch_bytes)});
  }

  const char* chosen_engine() const override {
    if (ctx_.device() == Device::kGPU) {
      if (!cudnn_ && !plan_cudnn_) return "im2col";
      if (compute_type_ == DataType::kFloat) return channels_last_ ? "cudnn_nhwc" : "cudnn";
      if (compute_type_ == DataType::kBFloat16) return channels_last_ ? "cudnn_bf16_nhwc" : "cudnn_bf16";
      return channels_last_ ? "cudnn_fp16_nhwc" : "cudnn_fp16";
    }
    if (channels_last_ || bf16_) return bf16_ ? (channels_last_ ? "onednn_bf16_nhwc" : "onednn_bf16") : "onednn_nhwc";
    return onednn_ ? (onednn_layout_ == OneDnnLayout::kNative ? "onednn" : "onednn_plain") : "im2col";
  }

  // GPU with cuDNN: the algorithms are timed on the layer's real buffers and the net's workspace
  // (convolution_gpu.hpp); only the passes the net runs, and the weights only read.
  void OnMemoryBound(const BlobVec& bottom, const BlobVec& top, const BoundPasses& passes) override {
    if (!cudnn_) return;
    CudnnConvolutionBuffers b;
    const bool copy = ReadsWeightCopy();
    b.x = bottom[0]->raw_data();
    b.w = copy ? weights_compute_->raw_data() : blobs_[0]->raw_data();
    b.y = top[0]->raw_data();
    if (passes.backward) b.dy = top[0]->raw_diff();
    if (passes.propagate_down[0]) b.dx = bottom[0]->raw_diff();
    if (passes.param_diffs && param_propagate_down(0)) b.dw = copy ? dw_compute_->raw_data() : blobs_[0]->raw_diff();
    b.workspace = workspace_->data();
    b.workspace_bytes = WorkspaceCapacityBytes();
    const size_t bytes = std::max(CudnnConvolutionMeasure(ctx_, *cudnn_, b, Describe()), BiasSumBytes());
    workspace_->Reshape(std::vector<int>{FloatsFor(bytes)});
    memory_bound_ = true;
  }

  void InitParams() override {
    const ConvolutionParameter& p = param_.convolution_param();
    FillBlob(p.weight_filler(), blobs_[0].get(), ctx_.rng());
    if (bias_term_) FillBlob(p.bias_filler(), blobs_[1].get(), ctx_.rng());
  }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const float* bias = bias_term_ ? blobs_[1]->data() : nullptr;
    if (bf16_) {  // the weights rounded to bf16 (kept for Backward), bf16 activations in and out
      if (!onednn_) return;  // an empty input
      CopyWeightsForCompute();
      for (size_t i = 0; i < bottom.size(); ++i)
        OneDnnConvolutionForward(*onednn_, bottom[i]->raw_data(), weights_compute_->raw_data(), bias,
                                 top[i]->raw_data(), onednn_scratch_->data());
      return;
    }
    const float* w = blobs_[0]->data();
    for (size_t i = 0; i < bottom.size(); ++i) {
      if (onednn_) {
        OneDnnConvolutionForward(*onednn_, bottom[i]->data(), w, bias, top[i]->data(), onednn_scratch_->data());
      } else {
        ForwardIm2col(bottom[i]->data(), w, bias, top[i]->data(), Im2colBuffersOfLayer());
      }
    }
    col_holds_forward_ = !onednn_ && bottom.size() == 1 && keep_cols_;
  }

  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    const bool need_w = param_propagate_down(0);
    const bool need_b = bias_term_ && param_propagate_down(1);
    float* dw = need_w ? blobs_[0]->diff() : nullptr;
    float* db = need_b ? blobs_[1]->diff() : nullptr;
    if (bf16_) {  // bf16 x, dy, dx and weights; the float gradients add into the master weights' diffs
      if (!onednn_) return;
      for (size_t i = 0; i < top.size(); ++i) {
        void* dx = propagate_down[i] ? bottom[i]->raw_diff() : nullptr;
        if (dw || db || dx)
          OneDnnConvolutionBackward(*onednn_, bottom[i]->raw_data(), weights_compute_->raw_data(), top[i]->raw_diff(), dw,
                                    db, dx, onednn_scratch_->data());
      }
      return;
    }
    const float* w = blobs_[0]->data();
    if (onednn_) {
      for (size_t i = 0; i < top.size(); ++i) {
        float* dx = propagate_down[i] ? bottom[i]->diff() : nullptr;
        if (dw || db || dx)
          OneDnnConvolutionBackward(*onednn_, bottom[i]->data(), w, top[i]->diff(), dw, db, dx, onednn_scratch_->data());
      }
      return;
    }
    Im2colBuffers buffers = Im2colBuffersOfLayer();
    for (size_t i = 0; i < top.size(); ++i)
      BackwardIm2col(bottom[i]->data(), w, top[i]->diff(), dw, db, propagate_down[i] ? bottom[i]->diff() : nullptr,
                     buffers, /*first=*/i == 0);
    if (dw) AddDwPartials(buffers.dw_partial, dw);
    // Columns overwritten by the data gradient are gone.
    if (std::find(propagate_down.begin(), propagate_down.end(), true) != propagate_down.end())
      col_holds_forward_ = false;
  }

  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    const float* bias = bias_term_ ? blobs_[1]->data() : nullptr;
    if (cudnn_) {  // in the bottoms' type and layout; the bias added by the layer's own kernel
      const void* w = blobs_[0]->raw_data();
      if (ReadsWeightCopy()) {
        CopyWeightsForCompute();
        w = weights_compute_->raw_data();
      }
      for (size_t i = 0; i < bottom.size(); ++i) {
        CudnnConvolutionForward(ctx_, *cudnn_, bottom[i]->raw_data(), w, top[i]->raw_data(), workspace_->data(),
                                WorkspaceBytes());
        if (bias) scale::AddBias(ctx_, OutputLayout(), compute_type_, bias, top[i]->raw_data());
      }
      return;
    }
    const float* w = blobs_[0]->data();
    for (size_t i = 0; i < bottom.size(); ++i) {
      const auto [hw, mg, kg] = GemmSizes();
      float* col = col_->data();
      for (int n = 0; n < num_; ++n) {
        Im2ColGpu(ctx_, bottom[i]->data() + n * ImageFloats(), geom_, col);
        float* y = top[i]->data() + n * OutputFloats();
        for (int g = 0; g < group_; ++g)
          gpu_gemm(ctx_, Trans::kNo, Trans::kNo, mg, hw, kg, 1.0f, w + int64_t{g} * mg * kg,
                   col + int64_t{g} * kg * hw, 0.0f, y + int64_t{g} * mg * hw);
      }
      if (bias) scale::AddBias(ctx_, {num_, num_output_, hw}, DataType::kFloat, bias, top[i]->raw_data());
    }
  }

  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    float* dw = param_propagate_down(0) ? blobs_[0]->diff() : nullptr;
    float* db = bias_term_ && param_propagate_down(1) ? blobs_[1]->diff() : nullptr;
    if (cudnn_) {
      BackwardCudnn(top, propagate_down, bottom, dw, db);
      return;
    }
    const float* w = blobs_[0]->data();
    for (size_t i = 0; i < top.size(); ++i) {
      const float* dy = top[i]->diff();
      float* dx = propagate_down[i] ? bottom[i]->diff() : nullptr;
      const auto [hw, mg, kg] = GemmSizes();
      if (db) scale::AddBiasGradient(ctx_, {num_, num_output_, hw}, workspace_->data(), DataType::kFloat, dy, db);
      if (!dw && !dx) continue;
      float* col = col_->data();
      for (int n = 0; n < num_; ++n) {
        const float* dy_n = dy + n * OutputFloats();
        if (dw) {  // dW_g += dy_g · col_gᵀ
          Im2ColGpu(ctx_, bottom[i]->data() + n * ImageFloats(), geom_, col);
          for (int g = 0; g < group_; ++g)
            gpu_gemm(ctx_, Trans::kNo, Trans::kYes, mg, kg, hw, 1.0f, dy_n + int64_t{g} * mg * hw,
                     col + int64_t{g} * kg * hw, 1.0f, dw + int64_t{g} * mg * kg);
        }
        if (dx) {  // col_g = W_gᵀ · dy_g, folded back into the image
          for (int g = 0; g < group_; ++g)
            gpu_gemm(ctx_, Trans::kYes, Trans::kNo, kg, hw, mg, 1.0f, w + int64_t{g} * mg * kg,
                     dy_n + int64_t{g} * mg * hw, 0.0f, col + int64_t{g} * kg * hw);
          Col2ImGpu(ctx_, col, geom_, dx + n * ImageFloats());
        }
      }
    }
  }

 private:
  // ---- CPU: the im2col engine ----------------------------------------------------------------------
  // Where one call's columns, products and weight-gradient partials go: the layer's scratch blobs, or
  // buffers of the engine timing.
  struct Im2colBuffers {
    float* col;
    float* prod;
    float* dw_partial;
  };
  Im2colBuffers Im2colBuffersOfLayer() { return {col_->data(), product_->data(), dw_partial_->data()}; }
  int64_t DwPartialFloats() const { return (threads_ - 1) * blobs_[0]->count(); }
  // dW += the weight-gradient partials of threads 1..threads_-1 (BackwardIm2col's, after all tops).
  void AddDwPartials(const float* dw_partial, float* dw) const {
    const int64_t count = blobs_[0]->count();
    for (int t = 1; t < threads_; ++t) cpu_axpy(count, 1.0f, dw_partial + (t - 1) * count, dw);
  }

  void ForwardIm2col(const float* x, const float* w, const float* bias, float* top, const Im2colBuffers& buffers) {
    const int64_t hw = geom_.out_size();
    const int mg = num_output_ / group_;
    const int64_t kg = geom_.col_rows() / group_;
    const int chunks = (num_ + chunk_ - 1) / chunk_;
#pragma omp parallel for num_threads(threads_) schedule(static)
    for (int c = 0; c < chunks; ++c) {
      const auto [n0, b, cols, col, prod] = ChunkAt(c, omp_get_thread_num(), buffers);
      Im2Col(x + n0 * ImageFloats(), b, geom_, col);
      for (int g = 0; g < group_; ++g)
        cpu_gemm(Trans::kNo, Trans::kNo, mg, cols, static_cast<int>(kg), 1.0f, w + g * mg * kg,
                 col + g * kg * cols, 0.0f, prod + g * mg * cols);
      // (M, b, hw) → (b, M, hw), adding the bias.
      float* y = top + static_cast<int64_t>(n0) * num_output_ * hw;
      for (int k = 0; k < b; ++k) {
        for (int m = 0; m < num_output_; ++m) {
          const float* src = prod + (static_cast<int64_t>(m) * b + k) * hw;
          float* dst = y + (static_cast<int64_t>(k) * num_output_ + m) * hw;
          const float add = bias ? bias[m] : 0.0f;
          for (int64_t q = 0; q < hw; ++q) dst[q] = src[q] + add;
        }
      }
    }
  }

  // One top's gradients: db += Σ dy, dW (thread 0's part; the others' in dw_partial, which `first`
  // clears) and dx = ∂/∂x, each skipped when null. The caller adds the partials into dW at the end.
  void BackwardIm2col(const float* x, const float* w, const float* dy, float* dw, float* db, float* dx,
                      const Im2colBuffers& buffers, bool first) {
    const int64_t hw = geom_.out_size();
    const int mg = num_output_ / group_;
    const int64_t kg = geom_.col_rows() / group_;
    const int chunks = (num_ + chunk_ - 1) / chunk_;
    const int64_t wcount = blobs_[0]->count();
    if (dw && first && threads_ > 1) cpu_set(DwPartialFloats(), 0.0f, buffers.dw_partial);
    if (db) AddBiasGradient(dy, db);
    if (!dw && !dx) return;
#pragma omp parallel for num_threads(threads_) schedule(static)
    for (int c = 0; c < chunks; ++c) {
      const int t = omp_get_thread_num();
      const auto [n0, b, cols, col, prod] = ChunkAt(c, t, buffers);
      // dy (b, M, hw) → (M, b, hw).
      for (int k = 0; k < b; ++k) {
        for (int m = 0; m < num_output_; ++m) {
          const float* src = dy + ((static_cast<int64_t>(n0) + k) * num_output_ + m) * hw;
          std::copy(src, src + hw, prod + (static_cast<int64_t>(m) * b + k) * hw);
        }
      }
      if (dw) {
        float* dw_t = t == 0 ? dw : buffers.dw_partial + (t - 1) * wcount;
        if (!col_holds_forward_) Im2Col(x + n0 * ImageFloats(), b, geom_, col);
        for (int g = 0; g < group_; ++g)
          cpu_gemm(Trans::kNo, Trans::kYes, mg, static_cast<int>(kg), cols, 1.0f, prod + g * mg * cols,
                   col + g * kg * cols, 1.0f, dw_t + g * mg * kg);
      }
      if (!dx) continue;
      for (int g = 0; g < group_; ++g)
        cpu_gemm(Trans::kYes, Trans::kNo, static_cast<int>(kg), cols, mg, 1.0f, w + g * mg * kg,
                 prod + g * mg * cols, 0.0f, col + g * kg * cols);
      Col2Im(col, b, geom_, dx + n0 * ImageFloats());
    }
  }

  // ---- CPU: choosing the engine ---------------------------------------------------------------------
  // Sets onednn_ (null for im2col) for the current shape: from the prototxt's engine and the CPU engine
  // setting, timing the candidates when both leave the choice open (cpu_engine_choice.hpp).
  void ChooseCpuEngine() {
    // NHWC or bf16: oneDNN's code (the Net asked only where it runs), NHWC on Cortado's buffers.
    if (channels_last_ || bf16_) {
      std::string why;
      onednn_layout_ = channels_last_ ? OneDnnLayout::kPlain : OneDnnLayout::kNative;
      onednn_ = CreateOneDnnConvolution(num_, num_output_, group_, geom_, bias_term_, onednn_layout_, &why,
                                        bf16_ ? OneDnnDataType::kBFloat16 : OneDnnDataType::kFloat32, channels_last_);
      CORTADO_REQUIRE(onednn_ != nullptr || num_ == 0 || channels_ == 0, Describe(), ": oneDNN has no ",
                      channels_last_ ? "channels-last " : "", bf16_ ? "bf16 " : "", "convolution for this shape (", why,
                      "); run the net with layout: NCHW and float");
      return;
    }
    const EngineRule rule = CpuEngineRule(param_.convolution_param(), ctx_.plan_only());
    bool im2col_only = rule == EngineRule::kOwn;
    bool timed = rule == EngineRule::kTimed;
    OneDnnLayout layout = OneDnnLayout::kNative;
    // A new shape after the memory plan (a Filter upstream changed the batch): the engine chosen at
    // set-up stays, within the buffers planned for it.
    const bool planned = col_->data() != nullptr || onednn_scratch_->data() != nullptr;
    if (planned) {
      im2col_only = onednn_ == nullptr;
      timed = false;
      layout = onednn_layout_;
    }
    onednn_.reset();
    if (im2col_only || num_ == 0 || channels_ == 0) return;  // (no channels: nothing to compute but the bias)
    if (timed) {
      const int winner = ChooseEngineByTiming(ShapeKey(), Describe(), TimingCandidates());
      if (winner == 0) return;
      layout = winner == 1 ? OneDnnLayout::kPlain : OneDnnLayout::kNative;
    }
    std::string why;
    onednn_ = CreateOneDnnConvolution(num_, num_output_, group_, geom_, bias_term_, layout, &why);
    onednn_layout_ = layout;
    if (!onednn_) {
      CORTADO_REQUIRE(!planned, Describe(), ": oneDNN has no convolution for the new shape (", why, ")");
      LOG(INFO) << Describe() << ": oneDNN has no convolution for this shape (" << why << "): im2col";
      return;
    }
    if (planned)
      CORTADO_REQUIRE(OneDnnConvolutionScratchBytes(*onednn_) <= static_cast<size_t>(onednn_scratch_->capacity()) * sizeof(float),
                      Describe(), ": oneDNN needs more scratch for the new shape than was planned at set-up; give "
                      "the layer engine: CAFFE");
  }

  // The current shape, as cpu_engine_choice.hpp records it.
  std::string ShapeKey() const {
    const ConvGeometry& g = geom_;
    std::ostringstream s;
    s << "Convolution:" << num_ << ',' << g.channels << ',' << g.height << ',' << g.width << ',' << num_output_ << ','
      << group_ << ',' << g.kernel_h << ',' << g.kernel_w << ',' << g.pad_h << ',' << g.pad_w << ',' << g.stride_h
      << ',' << g.stride_w << ',' << g.dilation_h << ',' << g.dilation_w << ',' << (bias_term_ ? 1 : 0);
    return s.str();
  }

  // im2col, oneDNN on Cortado's buffers, oneDNN in its own layouts (ChooseEngineByTiming's indices 0, 1, 2).
  std::vector<EngineCandidate> TimingCandidates() {
    std::vector<EngineCandidate> candidates{{"im2col", [this](std::string*) { return TimeCandidate(nullptr); }}};
    for (OneDnnLayout layout : {OneDnnLayout::kPlain, OneDnnLayout::kNative}) {
      candidates.push_back({layout == OneDnnLayout::kPlain ? "onednn_plain" : "onednn", [this, layout](std::string* why) {
                              const OneDnnConvolutionPtr conv =
                                  CreateOneDnnConvolution(num_, num_output_, group_, geom_, bias_term_, layout, why);
                              return conv ? TimeCandidate(conv.get()) : -1.0;
                            }});
    }
    return candidates;
  }

  // Milliseconds of one forward and backward (all gradients) of the current shape with oneDNN's
  // primitives `conv` (null: im2col), on buffers of its own (set-up time, before the memory plan): the
  // best of a few runs.
  double TimeCandidate(const OneDnnConvolution* conv) {
    const int64_t x_count = num_ * ImageFloats(), y_count = num_ * OutputFloats();
    std::vector<float> x(x_count), w(blobs_[0]->count()), bias(num_output_), y(y_count), dy(y_count), dx(x_count),
        dw(w.size()), db(bias.size());
    FillForTiming(&x);
    FillForTiming(&w);
    FillForTiming(&dy);
    FillForTiming(&bias);
    std::vector<float> col, prod, partial, scratch;
    if (conv) {
      scratch.resize(FloatsFor(OneDnnConvolutionScratchBytes(*conv)));
    } else {
      col.resize(col_floats_), prod.resize(product_floats_), partial.resize(DwPartialFloats());
    }
    const float* b = bias_term_ ? bias.data() : nullptr;
    float* gb = bias_term_ ? db.data() : nullptr;
    const auto run = [&] {
      if (conv) {
        OneDnnConvolutionForward(*conv, x.data(), w.data(), b, y.data(), scratch.data());
        OneDnnConvolutionBackward(*conv, x.data(), w.data(), dy.data(), dw.data(), gb, dx.data(), scratch.data());
        return;
      }
      const Im2colBuffers buffers{col.data(), prod.data(), partial.data()};
      ForwardIm2col(x.data(), w.data(), b, y.data(), buffers);
      col_holds_forward_ = keep_cols_;
      BackwardIm2col(x.data(), w.data(), dy.data(), dw.data(), gb, dx.data(), buffers, true);
      AddDwPartials(partial.data(), dw.data());
      col_holds_forward_ = false;
    };
    return BestMilliseconds(run);
  }

  // ---- GPU: the cuDNN engine ------------------------------------------------------------------------
  // Whether the computation reads a copy of the weights (weights_compute_) rather than the float
  // master: oneDNN's bf16 code; cuDNN on 16-bit data, or channels-last ((K, R, S, C/group) weights).
  bool ReadsWeightCopy() const {
    if (ctx_.device() == Device::kCPU) return bf16_;
    return compute_type_ != DataType::kFloat || channels_last_;
  }

  // A copy of the weights (its count; its order may differ), or nothing.
  void SizeLikeWeights(Blob* copy, bool used) const {
    if (used) {
      copy->ReshapeLike(*blobs_[0]);
    } else {
      copy->Reshape(std::vector<int>{0});
    }
  }

  // weights_compute_ = the float master weights in the compute type, transposed to (K, R, S, C/group)
  // for a channels-last GPU computation.
  void CopyWeightsForCompute() {
    cast::Conversion c{compute_type_, DataType::kFloat};
    c.transpose = ctx_.device() == Device::kGPU && channels_last_;
    c.channels = channels_ / group_;
    c.spatial = static_cast<int64_t>(geom_.kernel_h) * geom_.kernel_w;
    c.to_nhwc = true;
    cast::CastValues(ctx_, blobs_[0]->count(), c, weights_compute_->raw_data(), blobs_[0]->data());
  }

  // The tops as (planes, channels, spatial): NCHW (N, M, OH·OW), or channels-last (N·OH·OW, M, 1).
  ChannelLayout OutputLayout() const {
    const int64_t hw = geom_.out_size();
    return channels_last_ ? ChannelLayout{num_ * hw, num_output_, 1} : ChannelLayout{num_, num_output_, hw};
  }

  // The bias gradient's chunked channel sums, in the workspace (kernels/channel_sums.hpp).
  size_t BiasSumBytes() const {
    if (!bias_term_) return 0;
    const ChannelLayout l = OutputLayout();
    return static_cast<size_t>(ChannelSumScratchFloats(l.num, l.channels, l.spatial, 1)) * sizeof(float);
  }

  // cuDNN's gradients, in the bottoms' type and layout: db += Σ dy (the layer's own sums); dw straight
  // into the master's diff, or, where the computation reads a weight copy, into dw_compute_ and then
  // added to the master's (transposed back from (K, R, S, C/group)); dx written.
  void BackwardCudnn(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom, float* dw,
                     float* db) {
    const bool copy = ReadsWeightCopy();
    const void* w = copy ? weights_compute_->raw_data() : blobs_[0]->raw_data();
    for (size_t i = 0; i < top.size(); ++i) {
      if (db) scale::AddBiasGradient(ctx_, OutputLayout(), workspace_->data(), compute_type_, top[i]->raw_diff(), db);
      void* dx = propagate_down[i] ? bottom[i]->raw_diff() : nullptr;
      void* dw_out = dw == nullptr ? nullptr : copy ? dw_compute_->raw_data() : static_cast<void*>(dw);
      if (dw_out == nullptr && dx == nullptr) continue;
      CudnnConvolutionBackward(ctx_, *cudnn_, bottom[i]->raw_data(), w, top[i]->raw_diff(), dw_out,
                               /*dw_accumulates=*/!copy, dx, workspace_->data(), WorkspaceBytes());
      if (dw && copy)
        cast::AddValues(ctx_, blobs_[0]->count(), compute_type_, dw_compute_->raw_data(), channels_last_,
                        channels_ / group_, static_cast<int64_t>(geom_.kernel_h) * geom_.kernel_w, dw);
    }
  }

  // GPU nets: the cuDNN workspace (and the bias sums'), or one image's columns; none of the CPU's buffers.
  void ReshapeGpuBuffers() {
    product_->Reshape(std::vector<int>{0});
    dw_partial_->Reshape(std::vector<int>{0});
    if (cudnn_ || plan_cudnn_) {
      SizeLikeWeights(dw_compute_, ReadsWeightCopy());
      // Once bound, the workspace cannot grow: the algorithms must fit in what it has.
      const size_t most = ctx_.gpu_settings().cudnn_workspace_limit;
      const bool bound = memory_bound_ || workspace_->data() != nullptr;
      const size_t limit = bound ? std::min(most, WorkspaceCapacityBytes()) : most;
      const size_t bytes = plan_cudnn_ ? limit
                                       : CudnnConvolutionReshape(ctx_, *cudnn_, num_, num_output_, group_, geom_,
                                                                 compute_type_, channels_last_, limit, Describe());
      workspace_->Reshape(std::vector<int>{FloatsFor(std::max(bytes, BiasSumBytes()))});
      col_->Reshape(std::vector<int>{0});
      return;
    }
    SizeLikeWeights(dw_compute_, false);
    const int64_t col_floats = geom_.col_rows() * geom_.out_size();
    CHECK_LE(col_floats, int64_t{INT32_MAX}) << Describe() << ": column buffer too large";
    col_->Reshape(std::vector<int>{static_cast<int>(col_floats)});
    SetScratchLife(col_, ScratchLife::kWithinCall);  // one image's columns, unrolled in each call
    // The bias gradient's chunked channel sums (kernels/channel_sums.hpp).
    workspace_->Reshape(std::vector<int>{bias_term_ ? ChannelSumScratchFloats(num_, num_output_, geom_.out_size(), 1) : 0});
  }

  size_t WorkspaceBytes() const { return static_cast<size_t>(workspace_->count()) * sizeof(float); }
  size_t WorkspaceCapacityBytes() const { return static_cast<size_t>(workspace_->capacity()) * sizeof(float); }
  int64_t ImageFloats() const { return static_cast<int64_t>(channels_) * geom_.height * geom_.width; }
  int64_t OutputFloats() const { return static_cast<int64_t>(num_output_) * geom_.out_size(); }
  // One image's products: output positions, outputs per group, column rows per group.
  struct GemmDims {
    int hw, mg, kg;
  };
  GemmDims GemmSizes() const {
    return {static_cast<int>(geom_.out_size()), num_output_ / group_, static_cast<int>(geom_.col_rows() / group_)};
  }

  void CheckFits(const char* axis, int size, int pad, int kernel, int dilation, int extent) const {
    CORTADO_REQUIRE(extent <= size + 2 * pad, Describe(), ": the kernel ", axis, " ", kernel,
                    dilation > 1 ? " (dilated extent " + std::to_string(extent) + ")" : std::string(),
                    " is larger than the padded input ", axis, " ", size + 2 * pad, " (", size,
                    " + 2·pad ", pad, ")");
  }

  // Chunk c of the batch as thread t works on it: its first image, image count, column count, and
  // the column and product buffers it uses.
  struct Chunk {
    int n0, images, cols;
    float* col;
    float* prod;
  };
  Chunk ChunkAt(int c, int t, const Im2colBuffers& buffers) const {
    const int n0 = c * chunk_;
    const int images = std::min(chunk_, num_ - n0);
    const int64_t per_image = std::max<int64_t>(geom_.col_rows() * geom_.out_size(), 1);  // 0 for an empty input
    float* col = buffers.col + (keep_cols_ ? n0 * per_image : t * chunk_ * per_image);
    return {n0, images, static_cast<int>(images * geom_.out_size()), col, buffers.prod + t * chunk_product_};
  }

  // db[m] += Σ_{n, q} dy[n][m][q].
  void AddBiasGradient(const float* dy, float* db) const {
    const int64_t hw = geom_.out_size();
    for (int n = 0; n < num_; ++n) {
      for (int m = 0; m < num_output_; ++m) {
        db[m] += Sum(dy + (static_cast<int64_t>(n) * num_output_ + m) * hw, hw);
      }
    }
  }

  ConvGeometry geom_;
  int num_output_ = 0, group_ = 1, channels_ = 0;
  bool bias_term_ = true;
  int num_ = 0, chunk_ = 1;
  bool keep_cols_ = false;          // col_ holds every chunk's columns, not just one chunk's
  Blob* col_ = nullptr;
  Blob* product_ = nullptr;
  Blob* dw_partial_ = nullptr;      // weight-gradient partials of threads 1..threads_-1
  int threads_ = 1;
  int64_t chunk_product_ = 0;       // floats of one thread's product buffer
  int64_t col_floats_ = 0, product_floats_ = 0;  // what the im2col engine's col_ and product_ need
  OneDnnConvolutionPtr onednn_{nullptr, nullptr};  // CPU, oneDNN engine: the primitives for this shape
  OneDnnLayout onednn_layout_ = OneDnnLayout::kNative;
  bool channels_last_ = false;  // the bottoms and tops are NHWC (Blob::channels_last): oneDNN's nhwc code
  DataType compute_type_ = DataType::kFloat;  // of the bottoms and tops, data and diffs (the Net's plan)
  bool bf16_ = false;                  // CPU, bf16 bottoms and tops: oneDNN's bf16 code
  Blob* weights_compute_ = nullptr;    // the weights as the computation reads them (ReadsWeightCopy), Forward to Backward
  Blob* dw_compute_ = nullptr;         // GPU, with weights_compute_: cuDNN's weight gradient, before the master's
  Blob* onednn_scratch_ = nullptr;  // CPU: the oneDNN engine's scratchpads and reordered data (a workspace)
  bool col_holds_forward_ = false;  // col_ has the forward's columns of the only bottom
  Blob* workspace_ = nullptr;       // GPU nets: cuDNN's workspace (empty for the im2col engine)
  CudnnConvolutionPtr cudnn_{nullptr, nullptr};  // GPU with cuDNN: descriptors and algorithms
  bool plan_cudnn_ = false;                        // a plan-only GPU context: cuDNN's workspace limit counts
  bool memory_bound_ = false;                      // OnMemoryBound ran: the workspace cannot grow
};

CORTADO_REGISTER_LAYER(Convolution, ConvolutionLayer);

// Channels-last and 16-bit computations are cuDNN's on the GPU (engine DEFAULT or CUDNN, in a build
// with cuDNN) and oneDNN's on the CPU, for 2-D convolutions over axis 1.
bool ConvolutionRunsChannelsLast(const LayerParameter& layer, Device device) {
  const ConvolutionParameter& p = layer.convolution_param();
  if (p.axis() != 1 || p.force_nd_im2col() || p.kernel_size_size() > 2) return false;
  if (device == Device::kGPU) return BuiltWithCudnn() && p.engine() != ConvolutionParameter::CAFFE;
  return OneDnnEnabled() && CpuEngineRule(p, false) != EngineRule::kOwn;
}

bool ConvolutionComputesOn(const LayerParameter& layer, Type type, Device device) {
  if (type == FLOAT) return true;
  if (!ConvolutionRunsChannelsLast(layer, device)) return false;
  if (device == Device::kGPU) return type == BFLOAT16 || type == FLOAT16;
  return type == BFLOAT16 && OneDnnRunsBf16();
}

}  // namespace cortado
