// split.cpp — Split: copies one bottom to N tops so several layers can consume it (the Net inserts
// these). Forward: top_k = x for every k. Backward: dx = Σ_k dtop_k.
// A top's data may be a read-only view of the bottom's (TopMayViewBottomData: the Net decides, unless
// a later layer writes that top in place); Forward copies only into the tops that have memory of
// their own. The diffs are always separate, since each branch writes its own.
// Backward sums the tops' diffs in one pass for the first two (not a copy and an add), on either device
// (kernels/arithmetic.hpp's Sum).
#include "cortado/error.hpp"
#include "cortado/kernels/arithmetic.hpp"
#include "cortado/layer_registry.hpp"
#include "cortado/math_gpu.hpp"  // copy_on

namespace cortado {

class SplitLayer : public EitherDevice<Layer> {
 public:
  using EitherDevice::EitherDevice;
  const char* type() const override { return "Split"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int MinTopBlobs() const override { return 1; }
  bool BackwardReadsBottomData(int) const override { return false; }
  bool BackwardReadsTopData(int) const override { return false; }
  bool TopMayViewBottomData(int) const override { return true; }

  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    for (Blob* t : top) {
      CORTADO_REQUIRE(t != bottom[0], Describe(), ": cannot run in place; give each top its own name");
      t->ReshapeLike(*bottom[0]);
    }
  }

 protected:
  void Forward_any(const BlobVec& bottom, const BlobVec& top) override {
    for (Blob* t : top)
      if (t->data() != bottom[0]->data()) copy_on(ctx_, bottom[0]->count(), bottom[0]->data(), t->data());
  }

  // dx = dtop_0 + dtop_1 in one pass, then + dtop_k for each further top (the order of the sums of a
  // copy followed by axpys, so the same bits).
  void Backward_any(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const int64_t n = bottom[0]->count();
    float* dx = bottom[0]->diff();
    if (top.size() == 1) {
      copy_on(ctx_, n, top[0]->diff(), dx);
      return;
    }
    Map(ctx_, n, arithmetic::Sum{}, dx, top[0]->diff(), top[1]->diff());
    for (size_t k = 2; k < top.size(); ++k) Map(ctx_, n, arithmetic::Sum{}, dx, static_cast<const float*>(dx), top[k]->diff());
  }
};

CORTADO_REGISTER_LAYER(Split, SplitLayer);

}  // namespace cortado
