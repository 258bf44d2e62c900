// spp.cpp — SPP, spatial pyramid pooling (Caffe's SPPLayer). spp_param: pyramid_height L (≥ 1), pool
// MAX (default), AVE or STOCHASTIC.
//
// Bottom (N, C, H, W). Level i < L pools the image into bins = 2^i windows per axis with
//   kernel_h = ceil(H / bins),  pad_h = (kernel_h·bins − H + 1) / 2,  stride_h = kernel_h   (W likewise),
// i.e. an inner Pooling layer (the Pooling code itself, on either device) whose top is (N, C, bins,
// bins). The levels are flattened per image and concatenated in level order:
//   top (N, C·Σ_i 4^i),  top[n][off_i + (c·bins + ph)·bins + pw] = level_i[n][c][ph][pw]
// with off_i = C·Σ_{j<i} 4^j. pyramid_height 1 is one global pool with Pooling's own 4-D top
// (N, C, 1, 1), as in Caffe. Backward: each level's Pooling backward on its slice of dy, the bottom
// gradients summed over the levels.
// The windows depend on H and W, so they are fixed when the layer is set up.
#include <glog/logging.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "copy_rows_gpu.hpp"
#include "cortado/error.hpp"
#include "cortado/layer_registry.hpp"
#include "cortado/math.hpp"
#include "cortado/math_gpu.hpp"

namespace cortado {

class SPPLayer : public EitherDevice<Layer> {
 public:
  using EitherDevice::EitherDevice;
  const char* type() const override { return "SPP"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }
  // As the levels' Pooling (all alike); with several levels the top is only copied from theirs.
  bool BackwardReadsBottomData(int) const override { return pools_.empty() || pools_[0]->BackwardReadsBottomData(0); }
  bool BackwardReadsTopData(int) const override {
    return pools_.empty() || (levels_ == 1 && pools_[0]->BackwardReadsTopData(0));
  }

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override {
    const SPPParameter& p = param_.spp_param();
    levels_ = static_cast<int>(p.pyramid_height());
    CORTADO_REQUIRE(p.pyramid_height() >= 1 && p.pyramid_height() <= 31, Describe(),
                    ": pyramid_height must be between 1 and 31, got ", p.pyramid_height());
    const Blob& x = *bottom[0];
    CORTADO_REQUIRE(x.num_axes() == 4, Describe(), ": the bottom must be 4-D (num, channels, height, width), got ",
                    x.shape_string());
    height_ = x.shape(2);
    width_ = x.shape(3);
    CORTADO_REQUIRE(height_ > 0 && width_ > 0, Describe(), ": the input's height and width must be positive, got ",
                    x.shape_string());
    for (int i = 0; i < levels_; ++i) {
      pools_.push_back(LayerRegistry::Create(LevelParam(i), ctx_));
      if (levels_ == 1) {
        pools_[0]->SetUp(bottom, top);
        continue;
      }
      pooled_.push_back(AddStepScratch(/*with_diff=*/true));
      pools_[i]->SetUp(bottom, {pooled_[i]});
    }
    if (levels_ > 1) level_dx_ = AddStepScratch();
  }

  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    const Blob& x = *bottom[0];
    CORTADO_REQUIRE(x.num_axes() == 4 && x.shape(2) == height_ && x.shape(3) == width_, Describe(),
                    ": the bottom must stay (num, channels, ", height_, ", ", width_,
                    ") after setup, since the pyramid's windows are fixed then; got ", x.shape_string());
    if (levels_ == 1) {
      pools_[0]->Reshape(bottom, top);
      return;
    }
    int64_t total = 0;
    for (int i = 0; i < levels_; ++i) {
      pools_[i]->Reshape(bottom, {pooled_[i]});
      total += pooled_[i]->count(1);
    }
    CHECK_LE(total, int64_t{INT32_MAX}) << Describe() << ": top too large";
    len_total_ = total;
    top[0]->Reshape({x.shape(0), static_cast<int>(total)});
    level_dx_->ReshapeLike(x);
  }

  // Each level's Pooling draws its own STOCHASTIC seed before a GPU step.
  void PrepareStep() override {
    for (auto& pool : pools_) pool->PrepareStep();
  }

  std::vector<Scratch> scratch_buffers() const override {
    std::vector<Scratch> out = Layer::scratch_buffers();
    for (const auto& pool : pools_)
      for (const Scratch& s : pool->scratch_buffers()) out.push_back(s);
    return out;
  }

 private:
  // The inner Pooling layer of level i: 2^i bins per axis over the whole (H, W) image.
  LayerParameter LevelParam(int level) const {
    const int bins = 1 << level;
    const int kernel_h = (height_ + bins - 1) / bins, kernel_w = (width_ + bins - 1) / bins;
    const int pad_h = (kernel_h * bins - height_ + 1) / 2, pad_w = (kernel_w * bins - width_ + 1) / 2;
    CORTADO_REQUIRE(pad_h < kernel_h && pad_w < kernel_w, Describe(), ": the input (", height_, "x", width_,
                    ") is too small for pyramid_height ", levels_, ": level ", level, "'s ", bins,
                    " bins per axis need a ", kernel_h, "x", kernel_w, " kernel with padding ", pad_h, "x", pad_w);
    const SPPParameter& spp = param_.spp_param();
    CORTADO_REQUIRE(spp.pool() != SPPParameter::STOCHASTIC || (pad_h == 0 && pad_w == 0), Describe(),
                    ": STOCHASTIC pooling takes no padding, but level ", level, " of a ", height_, "x", width_,
                    " input needs padding ", pad_h, "x", pad_w, " (use MAX or AVE)");
    LayerParameter inner;
    inner.set_name(name() + "/level" + std::to_string(level));
    inner.set_type("Pooling");
    inner.set_phase(param_.phase());
    PoolingParameter* pool = inner.mutable_pooling_param();
    pool->set_pool(static_cast<PoolingParameter::PoolMethod>(spp.pool()));
    pool->set_kernel_h(kernel_h);
    pool->set_kernel_w(kernel_w);
    pool->set_pad_h(pad_h);
    pool->set_pad_w(pad_w);
    pool->set_stride_h(kernel_h);
    pool->set_stride_w(kernel_w);
    return inner;
  }

  // Each level pools into its scratch top, then the levels are copied side by side into the top.
  void Forward_any(const BlobVec& bottom, const BlobVec& top) override {
    if (levels_ == 1) {
      pools_[0]->Forward(bottom, top);
      return;
    }
    for (int i = 0, offset = 0; i < levels_; ++i) {
      pools_[i]->Forward(bottom, {pooled_[i]});
      CopyLevel(i, offset, pooled_[i]->data(), top[0]->data(), /*to_top=*/true);
      offset += static_cast<int>(pooled_[i]->count(1));
    }
  }

  // Level 0 writes the bottom's gradient; each later level writes its own into level_dx_ (through a
  // view with the bottom's data), which is then added.
  void Backward_any(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    if (levels_ == 1) {
      pools_[0]->Backward(top, propagate_down, bottom);
      return;
    }
    Blob* x = bottom[0];
    level_bottom_.Reshape(x->shape());
    level_bottom_.Bind(x->device(), x->data(), level_dx_->data(), x->count());
    for (int i = 0, offset = 0; i < levels_; ++i) {
      CopyLevel(i, offset, top[0]->diff(), pooled_[i]->diff(), /*to_top=*/false);
      offset += static_cast<int>(pooled_[i]->count(1));
      if (i == 0) {
        pools_[0]->Backward({pooled_[0]}, {true}, bottom);
        continue;
      }
      pools_[i]->Backward({pooled_[i]}, {true}, {&level_bottom_});
      if (ctx_.device() == Device::kGPU) {
        gpu_axpy(ctx_, x->count(), 1.0f, level_dx_->data(), x->diff());
      } else {
        cpu_axpy(x->count(), 1.0f, level_dx_->data(), x->diff());
      }
    }
  }

  // Level i's (N, len) values to (to_top) or from columns [offset, offset + len) of the (N, total) top.
  void CopyLevel(int i, int offset, const float* src, float* dst, bool to_top) {
    const int64_t rows = pooled_[i]->shape(0), len = pooled_[i]->count(1), total = len_total_;
    const int64_t src_stride = to_top ? len : total, dst_stride = to_top ? total : len;
    const float* from = to_top ? src : src + offset;
    float* to = to_top ? dst + offset : dst;
    if (ctx_.device() == Device::kGPU) {
      CopyRowsGpu(ctx_, rows, len, from, src_stride, to, dst_stride);
      return;
    }
    for (int64_t r = 0; r < rows; ++r) cpu_copy(len, from + r * src_stride, to + r * dst_stride);
  }

  int levels_ = 0;
  int height_ = 0, width_ = 0;                  // the bottom's, fixed at setup
  int64_t len_total_ = 0;                       // the top's values per image
  std::vector<std::unique_ptr<Layer>> pools_;   // one Pooling layer per level
  std::vector<Blob*> pooled_;                   // their tops (with diffs); none when levels_ is 1
  Blob* level_dx_ = nullptr;                    // a later level's bottom gradient, before it is added
  Blob level_bottom_;                           // the bottom's data with level_dx_ as its diff
};

CORTADO_REGISTER_LAYER(SPP, SPPLayer);

}  // namespace cortado
