// reshape.cpp — Reshape: gives the bottom's data a new shape without copying. reshape_param.shape
// replaces the bottom axes [axis, axis + num_axes) (num_axes −1: through the last axis; a negative
// axis counts from the end, −1 meaning "after the last axis"). In the new dims, 0 copies the bottom
// dim at the same position and one −1 is inferred so the element count stays the same.
// The top is a view of the bottom's memory (TopAliasesBottom): Forward and Backward do nothing, on
// either device.
#include <climits>
#include <cstdint>
#include <sstream>

#include "cortado/error.hpp"
#include "cortado/layer_registry.hpp"

namespace cortado {

class ReshapeLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Reshape"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }
  int TopAliasesBottom(int) const override { return 0; }
  bool BackwardReadsBottomData(int) const override { return false; }
  bool BackwardReadsTopData(int) const override { return false; }

  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    CORTADO_REQUIRE(top[0] != bottom[0], Describe(), ": cannot run in place; give the top its own name");
    top[0]->Reshape(NewShape(*bottom[0]));
  }

 protected:
  void Forward_cpu(const BlobVec&, const BlobVec&) override {}
  void Backward_cpu(const BlobVec&, const std::vector<bool>&, const BlobVec&) override {}
  void Forward_gpu(const BlobVec&, const BlobVec&) override {}
  void Backward_gpu(const BlobVec&, const std::vector<bool>&, const BlobVec&) override {}

 private:
  std::vector<int> NewShape(const Blob& x) const {
    const ReshapeParameter& p = param_.reshape_param();
    const int n = x.num_axes();
    std::ostringstream asked;
    for (int64_t d : p.shape().dim()) asked << d << " ";
    // Every error names the layer, the bottom shape and the requested dims.
    auto require = [&](bool ok, const auto&... why) {
      CORTADO_REQUIRE(ok, Describe(), ": cannot reshape bottom ", x.shape_string(), " to shape { ",
                      asked.str(), "} (axis ", p.axis(), ", num_axes ", p.num_axes(), "): ", why...);
    };
    const int start = p.axis() >= 0 ? p.axis() : n + p.axis() + 1;
    require(start >= 0 && start <= n, "axis is out of range");
    require(p.num_axes() >= -1, "num_axes must be -1 or at least 0");
    const int end = p.num_axes() == -1 ? n : start + p.num_axes();
    require(end <= n, "axis + num_axes passes the last bottom axis");

    std::vector<int> shape(x.shape().begin(), x.shape().begin() + start);
    int inferred = -1;                                    // index into shape of the −1 dim
    int64_t known = x.count(0, start) * x.count(end, n);  // product of every dim but the −1
    for (int i = 0; i < p.shape().dim_size(); ++i) {
      int64_t d = p.shape().dim(i);
      if (d == -1) {
        require(inferred < 0, "only one dimension may be -1");
        inferred = static_cast<int>(shape.size());
        shape.push_back(1);
        continue;
      }
      if (d == 0) {
        require(start + i < n, "dim ", i, " is 0 but the bottom has no axis ", start + i, " to copy");
        d = x.shape(start + i);
      } else {
        require(d > 0, "dim ", i, " is ", d, "; dims must be positive, 0 (copy) or -1 (infer)");
        require(d <= INT_MAX, "dim ", i, " is ", d, ", past the largest blob dimension ", INT_MAX);
      }
      require(d == 0 || known <= INT64_MAX / d, "the new shape has more elements than a blob can hold");
      known *= d;
      shape.push_back(static_cast<int>(d));
    }
    shape.insert(shape.end(), x.shape().begin() + end, x.shape().end());
    if (inferred >= 0) {
      require(known > 0 && x.count() % known == 0, "the bottom's ", x.count(),
              " elements do not divide by the product of the other dims, ", known);
      shape[inferred] = static_cast<int>(x.count() / known);
    }
    int64_t count = 1;
    for (int d : shape) count *= d;
    require(count == x.count(), "the new shape has ", count, " elements but the bottom has ", x.count());
    return shape;
  }
};

CORTADO_REGISTER_LAYER(Reshape, ReshapeLayer);

}  // namespace cortado
