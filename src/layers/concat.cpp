// concat.cpp — Concat: joins the bottoms along one axis (concat_param.axis, default 1; the legacy
// concat_dim means the same). Every other dim must match. With outer = Π dims before the axis and
// inner = Π dims after it, top[n, o_k + a, i] = bottom_k[n, a, i], where o_k is the sum of the
// earlier bottoms' axis dims. Backward hands each bottom its slice of the top diff.
// GPU: one strided copy of `outer` rows per bottom (CopyRowsGpu: copy_rows_gpu.hpp, cuda/concat.cu).
#include "copy_rows_gpu.hpp"
#include "cortado/error.hpp"
#include "cortado/layer_registry.hpp"
#include "cortado/math.hpp"

namespace cortado {

class ConcatLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Concat"; }
  int MinBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }
  bool BackwardReadsBottomData(int) const override { return false; }
  bool BackwardReadsTopData(int) const override { return false; }

  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    const ConcatParameter& p = param_.concat_param();
    const Blob& first = *bottom[0];
    const int n = first.num_axes();
    CORTADO_REQUIRE(!(p.has_axis() && p.has_concat_dim()), Describe(),
                    ": give either axis or the legacy concat_dim, not both");
    const int axis = p.has_concat_dim() ? static_cast<int>(p.concat_dim()) : p.axis();
    CORTADO_REQUIRE(axis >= -n && axis < n, Describe(), ": axis ", axis,
                    " is out of range for bottom shape ", first.shape_string());
    axis_ = axis < 0 ? axis + n : axis;
    std::vector<int> shape = first.shape();
    for (size_t k = 1; k < bottom.size(); ++k) {
      const Blob& b = *bottom[k];
      bool match = b.num_axes() == n;
      for (int i = 0; match && i < n; ++i) match = i == axis_ || b.shape(i) == first.shape(i);
      CORTADO_REQUIRE(match, Describe(), ": bottom ", k, " has shape ", b.shape_string(),
                      " but bottom 0 has ", first.shape_string(), "; all dims except axis ", axis_,
                      " must match");
      shape[axis_] += b.shape(axis_);
    }
    top[0]->Reshape(shape);
  }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const int64_t outer = top[0]->count(0, axis_), inner = top[0]->count(axis_ + 1);
    const int top_dim = top[0]->shape(axis_);
    int offset = 0;  // where bottom k starts along the axis
    for (Blob* b : bottom) {
      const int64_t len = b->shape(axis_) * inner;
      for (int64_t o = 0; o < outer; ++o)
        cpu_copy(len, b->data() + o * len, top[0]->data() + (o * top_dim + offset) * inner);
      offset += b->shape(axis_);
    }
  }

  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    const int64_t outer = top[0]->count(0, axis_), inner = top[0]->count(axis_ + 1);
    const int top_dim = top[0]->shape(axis_);
    int offset = 0;
    for (size_t k = 0; k < bottom.size(); ++k) {
      Blob* b = bottom[k];
      const int64_t len = b->shape(axis_) * inner;
      if (propagate_down[k])
        for (int64_t o = 0; o < outer; ++o)
          cpu_copy(len, top[0]->diff() + (o * top_dim + offset) * inner, b->diff() + o * len);
      offset += b->shape(axis_);
    }
  }

  // Bottom k's rows (len values each) sit in the top's rows (top_dim · inner values) at offset.
  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    const int64_t outer = top[0]->count(0, axis_), inner = top[0]->count(axis_ + 1);
    const int64_t top_row = top[0]->shape(axis_) * inner;
    int offset = 0;
    for (Blob* b : bottom) {
      const int64_t len = b->shape(axis_) * inner;
      CopyRowsGpu(ctx_, outer, len, b->data(), len, top[0]->data() + offset * inner, top_row);
      offset += b->shape(axis_);
    }
  }

  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    const int64_t outer = top[0]->count(0, axis_), inner = top[0]->count(axis_ + 1);
    const int64_t top_row = top[0]->shape(axis_) * inner;
    int offset = 0;
    for (size_t k = 0; k < bottom.size(); ++k) {
      Blob* b = bottom[k];
      const int64_t len = b->shape(axis_) * inner;
      if (propagate_down[k]) CopyRowsGpu(ctx_, outer, len, top[0]->diff() + offset * inner, top_row, b->diff(), len);
      offset += b->shape(axis_);
    }
  }

 private:
  int axis_ = 1;
};

CORTADO_REGISTER_LAYER(Concat, ConcatLayer);

}  // namespace cortado
