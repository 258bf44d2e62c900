// input.cpp — Input: tops whose values the caller writes (deploy nets, tools feeding data by hand).
// No bottoms; InputParameter.shape gives one shape per top, one shape shared by every top, or none
// (the caller shapes the tops). Forward and Backward do nothing, on either device.
#include "cortado/error.hpp"
#include "cortado/gpu.hpp"
#include "cortado/layer_registry.hpp"

namespace cortado {

class InputLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Input"; }
  bool HasGpuImplementation() const override { return BuiltWithCuda(); }
  int ExactNumBottomBlobs() const override { return 0; }
  int MinTopBlobs() const override { return 1; }
  bool BackwardReadsTopData(int) const override { return false; }

  void LayerSetUp(const BlobVec&, const BlobVec& top) override {
    const InputParameter& p = param_.input_param();
    const int shapes = p.shape_size();
    const int tops = static_cast<int>(top.size());
    CORTADO_REQUIRE(shapes == 0 || shapes == 1 || shapes == tops, Describe(), ": has ", tops,
                    " tops but ", shapes, " input_param shapes; give one shape, one per top, or none");
    for (int i = 0; i < tops && shapes > 0; ++i) top[i]->Reshape(p.shape(shapes == 1 ? 0 : i));
  }
  // The shapes are the caller's once set up; nothing to recompute.
  void Reshape(const BlobVec&, const BlobVec&) override {}

 protected:
  void Forward_cpu(const BlobVec&, const BlobVec&) override {}
  void Backward_cpu(const BlobVec&, const std::vector<bool>&, const BlobVec&) override {}
  void Forward_gpu(const BlobVec&, const BlobVec&) override {}
  void Backward_gpu(const BlobVec&, const std::vector<bool>&, const BlobVec&) override {}
};

CORTADO_REGISTER_LAYER(Input, InputLayer);

}  // namespace cortado
