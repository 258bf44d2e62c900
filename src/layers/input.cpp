// input.cpp — Input: tops whose values the caller writes (deploy nets, tools feeding data by hand).
// No bottoms; InputParameter.shape gives one shape per top or one shape shared by every top; a net
// without any is refused here, naming this layer (the next layer would only see an unshaped blob).
// Forward and Backward do nothing, on either device.
#include <cstdint>

#include "cortado/error.hpp"
#include "cortado/layer_registry.hpp"

namespace cortado {

class InputLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Input"; }
  int ExactNumBottomBlobs() const override { return 0; }
  int MinTopBlobs() const override { return 1; }
  bool BackwardReadsTopData(int) const override { return false; }

  void LayerSetUp(const BlobVec&, const BlobVec& top) override {
    const InputParameter& p = param_.input_param();
    const int shapes = p.shape_size();
    const int tops = static_cast<int>(top.size());
    CORTADO_REQUIRE(shapes > 0, Describe(), ": input_param gives no shape for its top", tops == 1 ? " '" : "s '",
                    param_.top(0), tops == 1 ? "'" : "', ...",
                    "; add input_param { shape { dim: N dim: C dim: H dim: W } }");
    CORTADO_REQUIRE(shapes == 1 || shapes == tops, Describe(), ": has ", tops, " tops but ", shapes,
                    " input_param shapes; give one shape for every top, or one per top");
    for (int i = 0; i < tops; ++i) {
      const BlobShape& shape = p.shape(shapes == 1 ? 0 : i);
      for (int64_t d : shape.dim())
        CORTADO_REQUIRE(d >= 0 && d <= INT32_MAX, Describe(), ": input_param shape of top '", param_.top(i),
                        "' has dim ", d, "; dims must be between 0 and ", INT32_MAX);
      top[i]->Reshape(shape);
    }
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
