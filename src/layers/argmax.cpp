// argmax.cpp — ArgMax (Caffe's ArgMaxLayer): the indices (or values) of the top_k largest entries.
// argmax_param: out_max_val (default false), top_k (default 1), axis (optional; negative counts from
// the end). Entries are ranked as Caffe ranks them, by std::partial_sort of (value, index) pairs with
// std::greater: larger values first and, among equal values, the HIGHER index first.
//   Without axis: each of the N = shape(0) items is searched over all its count(1) values; the top is
//     N×1×top_k (at least 3 axes, the rest 1) holding the indices, or with out_max_val N×2×top_k
//     holding the top_k indices and then the top_k values of each item.
//   With axis: each position of the other axes is searched along the axis; the top is the bottom's
//     shape with the axis dim replaced by top_k, holding the indices, or with out_max_val the values.
// No backward: asking for the bottom's gradient is an Error (force_backward never asks).
// Each search is one ForEach index picking the top_k pairs one rank at a time (shape_ops_math.hpp,
// shared by both devices), in the same order as that partial_sort.
#include <algorithm>

#include "cortado/error.hpp"
#include "cortado/layer_registry.hpp"
#include "shape_ops_math.hpp"

namespace cortado {

class ArgMaxLayer : public EitherDevice<Layer> {
 public:
  using EitherDevice::EitherDevice;
  const char* type() const override { return "ArgMax"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }
  bool AllowForceBackward(int) const override { return false; }
  bool BackwardReadsBottomData(int) const override { return false; }  // no backward pass
  bool BackwardReadsTopData(int) const override { return false; }

  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    const ArgMaxParameter& p = param_.argmax_param();
    const Blob& b = *bottom[0];
    const int n = b.num_axes();
    CORTADO_REQUIRE(p.top_k() >= 1, Describe(), ": argmax_param.top_k must be at least 1");
    top_k_ = static_cast<int>(p.top_k());
    out_max_val_ = p.out_max_val();
    has_axis_ = p.has_axis();
    CORTADO_REQUIRE(n >= 1, Describe(), ": the bottom needs at least one axis, got shape ", b.shape_string());
    std::vector<int> shape;
    if (has_axis_) {
      CORTADO_REQUIRE(p.axis() >= -n && p.axis() < n, Describe(), ": argmax_param.axis ", p.axis(),
                      " is out of range for bottom shape ", b.shape_string());
      const int axis = p.axis() < 0 ? p.axis() + n : p.axis();
      CORTADO_REQUIRE(top_k_ <= b.shape(axis), Describe(), ": top_k ", top_k_, " is larger than axis ", axis,
                      " of bottom shape ", b.shape_string());
      dim_ = b.shape(axis);
      stride_ = b.count(axis + 1);
      shape = b.shape();
      shape[axis] = top_k_;
    } else {
      CORTADO_REQUIRE(top_k_ <= b.count(1), Describe(), ": top_k ", top_k_, " is larger than the ", b.count(1),
                      " values per item of bottom shape ", b.shape_string());
      dim_ = static_cast<int>(b.count(1));
      stride_ = 1;
      shape.assign(std::max(n, 3), 1);
      shape[0] = b.shape(0);
      shape[1] = out_max_val_ ? 2 : 1;
      shape[2] = top_k_;
    }
    num_ = dim_ == 0 ? 0 : b.count() / dim_;
    top[0]->Reshape(shape);
  }

 protected:
  void Forward_any(const BlobVec& bottom, const BlobVec& top) override {
    ForEach(ctx_, num_,
            shape_ops::ArgMaxSearch{dim_, stride_, top_k_, out_max_val_ && !has_axis_, out_max_val_ && has_axis_,
                                    bottom[0]->data(), top[0]->data()},
            static_cast<int64_t>(dim_) * top_k_);
  }

  void Backward_any(const BlobVec&, const std::vector<bool>& propagate_down, const BlobVec&) override {
    RefuseBackward(propagate_down);
  }

 private:
  void RefuseBackward(const std::vector<bool>& propagate_down) const {
    CORTADO_REQUIRE(propagate_down.empty() || !propagate_down[0], Describe(),
                    ": ArgMax has no gradient; nothing below it can be trained through it");
  }

  int top_k_ = 1;
  bool out_max_val_ = false, has_axis_ = false;
  int dim_ = 1;
  int64_t stride_ = 1, num_ = 0;
};

CORTADO_REGISTER_LAYER(ArgMax, ArgMaxLayer);

}  // namespace cortado
