// split.cpp — Split: copies one bottom to N tops so several layers can consume it (the Net inserts
// these). Forward: top_k = x for every k. Backward: dx = Σ_k dtop_k.
// A top's data may be a read-only view of the bottom's (TopMayViewBottomData: the Net decides, unless
// a later layer writes that top in place); Forward copies only into the tops that have memory of
// their own. The diffs are always separate, since each branch writes its own.
// GPU: the same copies and sums with math_gpu.hpp.
#include "cortado/error.hpp"
#include "cortado/layer_registry.hpp"
#include "cortado/math.hpp"
#include "cortado/math_gpu.hpp"

namespace cortado {

class SplitLayer : public Layer {
 public:
  using Layer::Layer;
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
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    for (Blob* t : top)
      if (t->data() != bottom[0]->data()) cpu_copy(bottom[0]->count(), bottom[0]->data(), t->data());
  }

  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const int64_t n = bottom[0]->count();
    float* dx = bottom[0]->diff();
    cpu_copy(n, top[0]->diff(), dx);
    for (size_t k = 1; k < top.size(); ++k) cpu_axpy(n, 1.0f, top[k]->diff(), dx);
  }

  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    for (Blob* t : top)
      if (t->data() != bottom[0]->data()) gpu_copy(ctx_, bottom[0]->count(), bottom[0]->data(), t->data());
  }

  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const int64_t n = bottom[0]->count();
    float* dx = bottom[0]->diff();
    gpu_copy(ctx_, n, top[0]->diff(), dx);
    for (size_t k = 1; k < top.size(); ++k) gpu_axpy(ctx_, n, 1.0f, top[k]->diff(), dx);
  }
};

CORTADO_REGISTER_LAYER(Split, SplitLayer);

}  // namespace cortado
