// euclidean_loss.cpp — EuclideanLoss: loss = Σ (a − b)² / (2N), N = shape(0).
// Bottoms a and b of the same count per sample; top: the scalar loss.
// Backward: da = (a − b) · dloss / N, db = −(a − b) · dloss / N; both bottoms may get gradients.
// GPU: kernels (cuda/euclidean_loss.cu) that write the loss and read dloss on the device, so
// neither Forward_gpu nor Backward_gpu waits for the GPU.
#include "cortado/error.hpp"
#include "cortado/kernels/neuron.hpp"
#include "cortado/layer_registry.hpp"

namespace cortado {

class EuclideanLossLayer : public LossLayer {
 public:
  using LossLayer::LossLayer;
  const char* type() const override { return "EuclideanLoss"; }
  bool AllowForceBackward(int) const override { return true; }
  bool BackwardReadsTopData(int) const override { return false; }  // dloss only

  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    LossLayer::Reshape(bottom, top);
    CORTADO_REQUIRE(bottom[0]->count(1) == bottom[1]->count(1), Describe(),
                    ": both inputs need the same number of values per sample, got ",
                    bottom[0]->shape_string(), " and ", bottom[1]->shape_string());
  }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const float* a = bottom[0]->data();
    const float* b = bottom[1]->data();
    const int64_t n = bottom[0]->count();
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      const float d = a[i] - b[i];
      sum += d * d;
    }
    top[0]->data()[0] = static_cast<float>(sum / (2.0 * bottom[0]->shape(0)));
  }

  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    const float* a = bottom[0]->data();
    const float* b = bottom[1]->data();
    const int64_t n = bottom[0]->count();
    const float alpha = top[0]->diff()[0] / bottom[0]->shape(0);
    for (int k = 0; k < 2; ++k) {
      if (!propagate_down[k]) continue;
      const float s = k == 0 ? alpha : -alpha;
      float* d = bottom[k]->diff();
      for (int64_t i = 0; i < n; ++i) d[i] = s * (a[i] - b[i]);
    }
  }

  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    EuclideanLossForwardGpu(ctx_, bottom[0]->count(), bottom[0]->data(), bottom[1]->data(),
                            2.0 * bottom[0]->shape(0), top[0]->data());
  }

  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    for (int k = 0; k < 2; ++k) {
      if (!propagate_down[k]) continue;
      EuclideanLossBackwardGpu(ctx_, bottom[0]->count(), bottom[0]->data(), bottom[1]->data(), top[0]->diff(),
                               static_cast<float>(bottom[0]->shape(0)), k == 0 ? 1.0f : -1.0f, bottom[k]->diff());
    }
  }
};

CORTADO_REGISTER_LAYER(EuclideanLoss, EuclideanLossLayer);

}  // namespace cortado
