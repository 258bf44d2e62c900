// euclidean_loss.cpp — EuclideanLoss: loss = Σ (a − b)² / (2N), N = shape(0).
// Bottoms a and b of the same count per sample; top: the scalar loss.
// Backward: da = (a − b) · dloss / N, db = −(a − b) · dloss / N; both bottoms may get gradients.
// The arithmetic is losses_math.hpp's, on either device: the loss is written and dloss read where the
// context lives, so neither pass waits for the GPU.
#include "cortado/error.hpp"
#include "cortado/layer_registry.hpp"
#include "losses_math.hpp"

namespace cortado {

class EuclideanLossLayer : public EitherDevice<LossLayer> {
 public:
  using EitherDevice::EitherDevice;
  const char* type() const override { return "EuclideanLoss"; }
  bool AllowForceBackward(int) const override { return true; }
  bool BackwardReadsTopData(int) const override { return false; }  // dloss only

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override {
    LossLayer::LayerSetUp(bottom, top);
    sums_ = AddCallScratch();
  }

  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    LossLayer::Reshape(bottom, top);
    CORTADO_REQUIRE(bottom[0]->count(1) == bottom[1]->count(1), Describe(),
                    ": both inputs need the same number of values per sample, got ",
                    bottom[0]->shape_string(), " and ", bottom[1]->shape_string());
    sums_->Reshape(std::vector<int>{static_cast<int>(TotalScratchFloats(loss::EuclideanTerm::kSums))});
  }

 protected:
  void Forward_any(const BlobVec& bottom, const BlobVec& top) override {
    Total(ctx_, bottom[0]->count(), sums_->data(), loss::EuclideanTerm{bottom[0]->data(), bottom[1]->data()},
          loss::EuclideanFinish{2.0 * bottom[0]->shape(0), top[0]->data()});
  }

  void Backward_any(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override {
    const auto num = static_cast<float>(bottom[0]->shape(0));
    for (int k = 0; k < 2; ++k) {
      if (!propagate_down[k]) continue;
      Map(ctx_, bottom[0]->count(), loss::EuclideanBackward{top[0]->diff(), num, k != 0}, bottom[k]->diff(),
          bottom[0]->data(), bottom[1]->data());
    }
  }

 private:
  Blob* sums_ = nullptr;  // Total's scratch (the GPU's block sums), within Forward
};

CORTADO_REGISTER_LAYER(EuclideanLoss, EuclideanLossLayer);

}  // namespace cortado
