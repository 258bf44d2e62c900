// split.cpp — Split: copies one bottom to N tops so several layers can consume it (the Net inserts
// these). Forward: top_k = x for every k. Backward: dx = Σ_k dtop_k.
// A top's data may be a read-only view of the bottom's (TopMayViewBottomData: the Net decides, unless
// a later layer writes that top in place); Forward copies only into the tops that have memory of
// their own. The diffs are always separate, since each branch writes its own.
// Backward sums the tops' diffs in one pass for the first two (not a copy and an add), on either device
// (kernels/arithmetic.hpp's Sum), over float or 16-bit storage.
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
    const Blob& x = *bottom[0];
    for (Blob* t : top) {
      if (t->raw_data() == x.raw_data()) continue;  // a view
      if (x.data_type() == DataType::kFloat) {
        copy_on(ctx_, x.count(), x.data(), t->data());
      } else {
        MapStored(ctx_, x.count(), arithmetic::Scaled{1.0f}, x.data_type(), t->raw_data(), x.raw_data());
      }
    }
  }

  // dx = dtop_0 + dtop_1 in one pass, then + dtop_k for each further top (the order of the sums of a
  // copy followed by axpys, so the same bits).
  void Backward_any(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const int64_t n = bottom[0]->count();
    const DataType type = bottom[0]->diff_type();
    void* dx = bottom[0]->raw_diff();
    if (top.size() == 1) {
      if (type == DataType::kFloat) {
        copy_on(ctx_, n, top[0]->diff(), bottom[0]->diff());
      } else {
        MapStored(ctx_, n, arithmetic::Scaled{1.0f}, type, dx, static_cast<const void*>(top[0]->raw_diff()));
      }
      return;
    }
    MapStored(ctx_, n, arithmetic::Sum{}, type, dx, static_cast<const void*>(top[0]->raw_diff()),
              static_cast<const void*>(top[1]->raw_diff()));
    for (size_t k = 2; k < top.size(); ++k)
      MapStored(ctx_, n, arithmetic::Sum{}, type, dx, static_cast<const void*>(dx),
                static_cast<const void*>(top[k]->raw_diff()));
  }
};

CORTADO_REGISTER_LAYER(Split, SplitLayer);

}  // namespace cortado
