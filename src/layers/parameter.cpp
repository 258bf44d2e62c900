// parameter.cpp — Parameter: a learnable blob as a layer's output (Caffe's ParameterLayer).
// No bottoms; one top of parameter_param.shape, which is the layer's one learnable blob P:
//   top = P;  dP += dtop  (accumulated like every learnable blob here).
// Caffe's layer has no filler: P starts at zero (the arena is zeroed) unless weights are loaded.
// Caffe shares the top's memory with P; here the top is its own blob, copied from P in Forward, so that
// the layers above may write its diff while P's diff accumulates (iter_size, shared parameters).
// GPU: gpu_copy and gpu_axpy.
#include <cstdint>

#include "cortado/error.hpp"
#include "cortado/layer_registry.hpp"
#include "cortado/math.hpp"
#include "cortado/math_gpu.hpp"

namespace cortado {

class ParameterLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Parameter"; }
  int ExactNumBottomBlobs() const override { return 0; }
  int ExactNumTopBlobs() const override { return 1; }
  bool BackwardReadsTopData(int) const override { return false; }  // dP += dtop

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override {
    for (int64_t d : param_.parameter_param().shape().dim())
      CORTADO_REQUIRE(d >= 0 && d <= INT32_MAX, Describe(), ": parameter_param.shape has dimension ", d,
                      "; dimensions must be in [0, 2^31)");
    blobs_.push_back(std::make_shared<Blob>());
    blobs_[0]->Reshape(param_.parameter_param().shape());
  }

  void Reshape(const BlobVec& bottom, const BlobVec& top) override { top[0]->ReshapeLike(*blobs_[0]); }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    cpu_copy(top[0]->count(), blobs_[0]->data(), top[0]->data());
  }

  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (param_propagate_down(0)) cpu_axpy(top[0]->count(), 1.0f, top[0]->diff(), blobs_[0]->diff());
  }

  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    gpu_copy(ctx_, top[0]->count(), blobs_[0]->data(), top[0]->data());
  }

  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (param_propagate_down(0)) gpu_axpy(ctx_, top[0]->count(), 1.0f, top[0]->diff(), blobs_[0]->diff());
  }
};

CORTADO_REGISTER_LAYER(Parameter, ParameterLayer);

}  // namespace cortado
