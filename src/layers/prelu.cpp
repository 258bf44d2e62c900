// prelu.cpp — PReLU (prelu_param: filler = constant 0.25 when unset, channel_shared = false).
// The bottom (N, C, ...) has C channels of D = count(2) values; channel c has a learnable slope a_c,
// one blob of shape (C), or of shape () holding a single a shared by every channel:
//   y = max(x, 0) + a_c · min(x, 0)
//   da_c += Σ_{elements of channel c} dy · x · (x ≤ 0)  (shared: da += the sum over all elements)
//   dx = dy · (x > 0 ? 1 : a_c)
// Backward needs x: run in place (top == bottom), Forward first keeps a copy of x in a scratch buffer,
// as Caffe does; the slope gradient is taken before dx overwrites dy (the same memory in place), its
// sums in double (Caffe adds each term to the float diff).
// The arithmetic is neuron_math.hpp's, on either device; the slope gradient is a reduction of its
// shared term, in order on the CPU and in chunks on the GPU (its partial sums in a workspace).
#include "cortado/error.hpp"
#include "cortado/filler.hpp"
#include "cortado/layer_registry.hpp"
#include "neuron_math.hpp"

namespace cortado {

class PReLULayer : public EitherDevice<NeuronLayer> {
 public:
  using EitherDevice::EitherDevice;
  const char* type() const override { return "PReLU"; }
  bool BackwardReadsTopData(int) const override { return false; }
  bool InPlaceSafe() const override { return true; }  // x kept (KeepInputWhenInPlace)

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override {
    RequireChannelAxis(*bottom[0]);
    shared_ = param_.prelu_param().channel_shared();
    channels_ = bottom[0]->shape(1);
    blobs_.push_back(std::make_shared<Blob>(shared_ ? std::vector<int>{} : std::vector<int>{channels_}));
    KeepInputWhenInPlace(bottom, top);
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
    if (partials_) partials_->Reshape(std::vector<int>{neuron::PReLUSlopeScratchFloats(Layout(), shared_)});
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
  void Forward_any(const BlobVec& bottom, const BlobVec& top) override {
    SaveInput(bottom);
    MapChannels(ctx_, Layout(), neuron::PReLUForward{blobs_[0]->data(), shared_}, top[0]->data(),
                bottom[0]->data());
  }

  void Backward_any(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override {
    const float* x = ForwardInput(bottom);
    const float* dy = top[0]->diff();
    if (param_propagate_down(0)) {  // before dx: in place, dx overwrites dy
      if (ctx_.device() == Device::kGPU) {
        neuron::PReLUSlopeGradGpu(ctx_, Layout(), shared_, x, dy, partials_->data(), blobs_[0]->diff());
      } else {
        SlopeGradCpu(x, dy, blobs_[0]->diff());
      }
    }
    if (!propagate_down[0]) return;
    MapChannels(ctx_, Layout(), neuron::PReLUBackward{blobs_[0]->data(), shared_}, bottom[0]->diff(), x, dy);
  }

 private:
  ChannelLayout Layout() const { return {num_, channels_, dim_}; }

  // da_c += Σ of the slope term over channel c, image by image in order, in double (shared: one sum
  // over every channel, added to da_0).
  void SlopeGradCpu(const float* x, const float* dy, float* da) const {
    const neuron::PReLUSlopeTerm term{x, dy};
    double total = 0;
    for (int c = 0; c < channels_; ++c) {
      double sum = 0;
      for (int k = 0; k < num_; ++k) {
        const int64_t start = (static_cast<int64_t>(k) * channels_ + c) * dim_;
        for (int64_t i = start; i < start + dim_; ++i) term(i, c, &sum);
      }
      if (shared_) {
        total += sum;
      } else {
        da[c] += static_cast<float>(sum);
      }
    }
    if (shared_) da[0] += static_cast<float>(total);
  }

  void RequireChannelAxis(const Blob& x) const {
    CORTADO_REQUIRE(x.num_axes() >= 2, Describe(), ": needs a bottom with a channel axis (at least 2 axes), got ",
                    x.shape_string());
  }

  bool shared_ = false;
  int num_ = 0, channels_ = 0;
  int64_t dim_ = 1;
  Blob* partials_ = nullptr;     // GPU: the slope gradient's partial sums (a workspace)
};

CORTADO_REGISTER_LAYER(PReLU, PReLULayer);

}  // namespace cortado
