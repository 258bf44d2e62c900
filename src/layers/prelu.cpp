// prelu.cpp — PReLU (prelu_param: filler = constant 0.25 when unset, channel_shared = false).
// The bottom (N, C, ...) has C channels of D = count(2) values; channel c has a learnable slope a_c,
// one blob of shape (C), or of shape () holding a single a shared by every channel:
//   y = max(x, 0) + a_c · min(x, 0)
//   da_c += Σ_{elements of channel c} dy · x · (x ≤ 0)  (shared: da += the sum over all elements)
//   dx = dy · (x > 0 ? 1 : a_c)
// Backward needs x: run in place (top == bottom), Forward first keeps a copy of x in a scratch buffer,
// as Caffe does; the slope gradient is taken before dx overwrites dy (the same memory in place), its
// sums in double (Caffe adds each term to the float diff).
// GPU: kernels in cuda/activations.cu; the slope gradient is a chunked channel sum (a shared slope's
// over the whole bottom as one channel), its partial sums in a workspace.
#include <algorithm>

#include "cortado/error.hpp"
#include "cortado/filler.hpp"
#include "cortado/gpu.hpp"
#include "cortado/kernels/activation.hpp"
#include "cortado/layer_registry.hpp"
#include "cortado/math.hpp"
#include "cortado/math_gpu.hpp"

namespace cortado {

class PReLULayer : public NeuronLayer {
 public:
  using NeuronLayer::NeuronLayer;
  const char* type() const override { return "PReLU"; }
  bool HasGpuImplementation() const override { return BuiltWithCuda(); }
  bool BackwardReadsBottomData(int) const override { return bottom_copy_ == nullptr; }  // else its copy
  bool BackwardReadsTopData(int) const override { return false; }
  bool InPlaceSafe() const override { return true; }  // x kept in bottom_copy_

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override {
    RequireChannelAxis(*bottom[0]);
    shared_ = param_.prelu_param().channel_shared();
    channels_ = bottom[0]->shape(1);
    blobs_.push_back(std::make_shared<Blob>(shared_ ? std::vector<int>{} : std::vector<int>{channels_}));
    if (top[0] == bottom[0]) bottom_copy_ = AddStepScratch();
    if (ctx_.device() == Device::kGPU) partials_ = AddWorkspace();
  }

  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    const Blob& x = *bottom[0];
    RequireChannelAxis(x);
    CORTADO_REQUIRE(shared_ || x.shape(1) == channels_, Describe(), ": the bottom ", x.shape_string(), " has ",
                    x.shape(1), " channels, but the slopes were made for ", channels_);
    NeuronLayer::Reshape(bottom, top);
    num_ = x.shape(0);
    channels_ = x.shape(1);
    dim_ = x.count(2);
    if (bottom_copy_) bottom_copy_->ReshapeLike(x);
    if (partials_) partials_->Reshape(std::vector<int>{PReLUSlopeScratchFloats(num_, channels_, dim_, shared_)});
  }

  void InitParams() override {
    const PReLUParameter& p = param_.prelu_param();
    FillerParameter filler;
    if (p.has_filler()) {
      filler = p.filler();
    } else {
      filler.set_type("constant");
      filler.set_value(0.25f);
    }
    FillBlob(filler, blobs_[0].get(), ctx_.rng());
  }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const float* x = bottom[0]->data();
    float* y = top[0]->data();
    if (bottom_copy_) cpu_copy(bottom[0]->count(), x, bottom_copy_->data());
    const float* slope = blobs_[0]->data();
    for (int k = 0; k < num_; ++k) {
      for (int c = 0; c < channels_; ++c) {
        const float a = slope[shared_ ? 0 : c];
        const int64_t start = (static_cast<int64_t>(k) * channels_ + c) * dim_;
        for (int64_t i = start; i < start + dim_; ++i) y[i] = std::max(x[i], 0.0f) + a * std::min(x[i], 0.0f);
      }
    }
  }

  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    const float* x = (bottom_copy_ ? bottom_copy_ : bottom[0])->data();
    const float* dy = top[0]->diff();
    const float* slope = blobs_[0]->data();
    if (param_propagate_down(0)) {  // before dx: in place, dx overwrites dy
      float* da = blobs_[0]->diff();
      double total = 0;  // shared: over all channels
      for (int c = 0; c < channels_; ++c) {
        double sum = 0;
        for (int k = 0; k < num_; ++k) {
          const int64_t start = (static_cast<int64_t>(k) * channels_ + c) * dim_;
          for (int64_t i = start; i < start + dim_; ++i)
            if (x[i] <= 0) sum += dy[i] * x[i];
        }
        if (shared_) {
          total += sum;
        } else {
          da[c] += static_cast<float>(sum);
        }
      }
      if (shared_) da[0] += static_cast<float>(total);
    }
    if (!propagate_down[0]) return;
    float* dx = bottom[0]->diff();
    for (int k = 0; k < num_; ++k) {
      for (int c = 0; c < channels_; ++c) {
        const float a = slope[shared_ ? 0 : c];
        const int64_t start = (static_cast<int64_t>(k) * channels_ + c) * dim_;
        for (int64_t i = start; i < start + dim_; ++i) dx[i] = x[i] > 0 ? dy[i] : dy[i] * a;
      }
    }
  }

  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    const int64_t n = bottom[0]->count();
    if (bottom_copy_) gpu_copy(ctx_, n, bottom[0]->data(), bottom_copy_->data());
    PReLUForwardGpu(ctx_, n, channels_, dim_, shared_, blobs_[0]->data(), bottom[0]->data(), top[0]->data());
  }

  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    const float* x = (bottom_copy_ ? bottom_copy_ : bottom[0])->data();
    if (param_propagate_down(0)) {  // queued before dx: in place, dx overwrites dy
      PReLUSlopeGradGpu(ctx_, num_, channels_, dim_, shared_, x, top[0]->diff(), partials_->data(),
                        blobs_[0]->diff());
    }
    if (!propagate_down[0]) return;
    PReLUBackwardGpu(ctx_, bottom[0]->count(), channels_, dim_, shared_, blobs_[0]->data(), x, top[0]->diff(),
                     bottom[0]->diff());
  }

 private:
  void RequireChannelAxis(const Blob& x) const {
    CORTADO_REQUIRE(x.num_axes() >= 2, Describe(), ": needs a bottom with a channel axis (at least 2 axes), got ",
                    x.shape_string());
  }

  bool shared_ = false;
  int num_ = 0, channels_ = 0;
  int64_t dim_ = 1;
  Blob* bottom_copy_ = nullptr;  // x, when run in place
  Blob* partials_ = nullptr;     // GPU: the slope gradient's partial sums (a workspace)
};

CORTADO_REGISTER_LAYER(PReLU, PReLULayer);

}  // namespace cortado
