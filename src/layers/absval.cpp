// absval.cpp — AbsVal: y = |x|.  Backward: dx = dy · sign(x), sign(0) = 0.
// No parameters. Like Caffe, it refuses to run in place (top == bottom): Backward needs x's sign.
// GPU: the same two loops as kernels (cuda/activations.cu).
#include <cmath>

#include "cortado/error.hpp"
#include "cortado/gpu.hpp"
#include "cortado/kernels/activation.hpp"
#include "cortado/layer_registry.hpp"

namespace cortado {

class AbsValLayer : public NeuronLayer {
 public:
  using NeuronLayer::NeuronLayer;
  const char* type() const override { return "AbsVal"; }
  bool HasGpuImplementation() const override { return BuiltWithCuda(); }
  bool BackwardReadsTopData(int) const override { return false; }

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override {
    CORTADO_REQUIRE(top[0] != bottom[0], Describe(), ": cannot run in place (its backward needs the input); "
                    "give the top its own name");
  }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const float* x = bottom[0]->data();
    float* y = top[0]->data();
    for (int64_t i = 0; i < bottom[0]->count(); ++i) y[i] = std::fabs(x[i]);
  }

  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const float* x = bottom[0]->data();
    const float* dy = top[0]->diff();
    float* dx = bottom[0]->diff();
    for (int64_t i = 0; i < bottom[0]->count(); ++i) dx[i] = dy[i] * static_cast<float>((x[i] > 0) - (x[i] < 0));
  }

  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    AbsValForwardGpu(ctx_, bottom[0]->count(), bottom[0]->data(), top[0]->data());
  }

  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    AbsValBackwardGpu(ctx_, bottom[0]->count(), bottom[0]->data(), top[0]->diff(), bottom[0]->diff());
  }
};

CORTADO_REGISTER_LAYER(AbsVal, AbsValLayer);

}  // namespace cortado
