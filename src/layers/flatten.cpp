// flatten.cpp — Flatten: merges axes [axis, end_axis] of the bottom into one (defaults 1 and −1:
// N×C×H×W becomes N×(C·H·W)). The top is a view of the bottom's memory (TopAliasesBottom), so
// Forward and Backward have nothing to do, on either device.
#include "cortado/error.hpp"
#include "cortado/layer_registry.hpp"

namespace cortado {

class FlattenLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Flatten"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }
  int TopAliasesBottom(int) const override { return 0; }
  bool BackwardReadsBottomData(int) const override { return false; }
  bool BackwardReadsTopData(int) const override { return false; }

  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    CORTADO_REQUIRE(top[0] != bottom[0], Describe(), ": cannot run in place; give the top its own name");
    const Blob& x = *bottom[0];
    const int n = x.num_axes();
    const int first = Axis(param_.flatten_param().axis(), x, "axis");
    const int last = Axis(param_.flatten_param().end_axis(), x, "end_axis");
    CORTADO_REQUIRE(first <= last, Describe(), ": axis ", first, " comes after end_axis ", last,
                    " for bottom shape ", x.shape_string());
    std::vector<int> shape(x.shape().begin(), x.shape().begin() + first);
    shape.push_back(static_cast<int>(x.count(first, last + 1)));
    shape.insert(shape.end(), x.shape().begin() + last + 1, x.shape().begin() + n);
    top[0]->Reshape(shape);
  }

 protected:
  void Forward_cpu(const BlobVec&, const BlobVec&) override {}
  void Backward_cpu(const BlobVec&, const std::vector<bool>&, const BlobVec&) override {}
  void Forward_gpu(const BlobVec&, const BlobVec&) override {}
  void Backward_gpu(const BlobVec&, const std::vector<bool>&, const BlobVec&) override {}

 private:
  // A flatten_param axis as an index into the bottom's axes (negative counts from the end).
  int Axis(int axis, const Blob& x, const char* field) const {
    const int n = x.num_axes();
    CORTADO_REQUIRE(axis >= -n && axis < n, Describe(), ": ", field, " ", axis,
                    " is out of range for bottom shape ", x.shape_string());
    return axis < 0 ? axis + n : axis;
  }
};

CORTADO_REGISTER_LAYER(Flatten, FlattenLayer);

}  // namespace cortado
