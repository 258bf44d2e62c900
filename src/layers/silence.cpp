// silence.cpp — Silence: consumes bottoms nobody else needs, so they are not reported as net
// outputs. No tops; Forward does nothing; Backward writes zero diffs to the bottoms that propagate
// (on the GPU with gpu_set).
#include "cortado/layer_registry.hpp"
#include "cortado/math.hpp"
#include "cortado/math_gpu.hpp"

namespace cortado {

class SilenceLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Silence"; }
  int MinBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 0; }
  bool BackwardReadsBottomData(int) const override { return false; }
  bool BackwardReadsTopData(int) const override { return false; }
  void Reshape(const BlobVec&, const BlobVec&) override {}

 protected:
  void Forward_cpu(const BlobVec&, const BlobVec&) override {}
  void Backward_cpu(const BlobVec&, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    for (size_t k = 0; k < bottom.size(); ++k)
      if (propagate_down[k]) cpu_set(bottom[k]->count(), 0.0f, bottom[k]->diff());
  }
  void Forward_gpu(const BlobVec&, const BlobVec&) override {}
  void Backward_gpu(const BlobVec&, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    for (size_t k = 0; k < bottom.size(); ++k)
      if (propagate_down[k]) gpu_set(ctx_, bottom[k]->count(), 0.0f, bottom[k]->diff());
  }
};

CORTADO_REGISTER_LAYER(Silence, SilenceLayer);

}  // namespace cortado
