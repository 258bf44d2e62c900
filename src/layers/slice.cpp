// slice.cpp — Slice: cuts the bottom along one axis (slice_param.axis, default 1; the legacy
// slice_dim means the same) into the tops. slice_point gives the k−1 cut positions for k tops; left
// empty, the axis is split into k equal parts. With outer = Π dims before the axis and inner = Π
// dims after it, top_k[n, a, i] = bottom[n, o_k + a, i], o_k the start of slice k.
// Backward gathers the tops' diffs back into the bottom diff.
// GPU: one strided copy of `outer` rows per top (CopyRowsGpu, shared with Concat: copy_rows_gpu.hpp).
#include "copy_rows_gpu.hpp"
#include "cortado/error.hpp"
#include "cortado/layer_registry.hpp"
#include "cortado/math.hpp"

namespace cortado {

class SliceLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Slice"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int MinTopBlobs() const override { return 1; }
  bool BackwardReadsBottomData(int) const override { return false; }
  bool BackwardReadsTopData(int) const override { return false; }

  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    const SliceParameter& p = param_.slice_param();
    const Blob& x = *bottom[0];
    const int n = x.num_axes();
    CORTADO_REQUIRE(!(p.has_axis() && p.has_slice_dim()), Describe(),
                    ": give either axis or the legacy slice_dim, not both");
    const int axis = p.has_slice_dim() ? static_cast<int>(p.slice_dim()) : p.axis();
    CORTADO_REQUIRE(axis >= -n && axis < n, Describe(), ": axis ", axis,
                    " is out of range for bottom shape ", x.shape_string());
    axis_ = axis < 0 ? axis + n : axis;
    const int dim = x.shape(axis_);
    const int tops = static_cast<int>(top.size());
    std::vector<int> sizes;  // of each slice along the axis
    if (p.slice_point_size() > 0) {
      CORTADO_REQUIRE(p.slice_point_size() == tops - 1, Describe(), ": has ", tops, " tops but ",
                      p.slice_point_size(), " slice_point values; give one fewer than the tops");
      int prev = 0;
      for (int i = 0; i <= p.slice_point_size(); ++i) {
        const int64_t point = i < p.slice_point_size() ? p.slice_point(i) : dim;
        CORTADO_REQUIRE(point > prev && point <= dim, Describe(), ": slice points must increase "
                        "strictly and stay inside (0, ", dim, ") for bottom shape ", x.shape_string(),
                        " along axis ", axis_);
        sizes.push_back(static_cast<int>(point) - prev);
        prev = static_cast<int>(point);
      }
    } else {
      CORTADO_REQUIRE(dim % tops == 0, Describe(), ": cannot split axis ", axis_, " of bottom shape ",
                      x.shape_string(), " into ", tops, " equal parts; give slice_point");
      sizes.assign(tops, dim / tops);
    }
    for (int k = 0; k < tops; ++k) {
      std::vector<int> shape = x.shape();
      shape[axis_] = sizes[k];
      top[k]->Reshape(shape);
    }
  }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const int64_t outer = bottom[0]->count(0, axis_), inner = bottom[0]->count(axis_ + 1);
    const int dim = bottom[0]->shape(axis_);
    int offset = 0;  // where top k starts along the axis
    for (Blob* t : top) {
      const int64_t len = t->shape(axis_) * inner;
      for (int64_t o = 0; o < outer; ++o)
        cpu_copy(len, bottom[0]->data() + (o * dim + offset) * inner, t->data() + o * len);
      offset += t->shape(axis_);
    }
  }

  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const int64_t outer = bottom[0]->count(0, axis_), inner = bottom[0]->count(axis_ + 1);
    const int dim = bottom[0]->shape(axis_);
    int offset = 0;
    for (Blob* t : top) {
      const int64_t len = t->shape(axis_) * inner;
      for (int64_t o = 0; o < outer; ++o)
        cpu_copy(len, t->diff() + o * len, bottom[0]->diff() + (o * dim + offset) * inner);
      offset += t->shape(axis_);
    }
  }

  // Top k's rows (len values each) sit in the bottom's rows (dim · inner values) at offset.
  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    const int64_t outer = bottom[0]->count(0, axis_), inner = bottom[0]->count(axis_ + 1);
    const int64_t bottom_row = bottom[0]->shape(axis_) * inner;
    int offset = 0;
    for (Blob* t : top) {
      const int64_t len = t->shape(axis_) * inner;
      CopyRowsGpu(ctx_, outer, len, bottom[0]->data() + offset * inner, bottom_row, t->data(), len);
      offset += t->shape(axis_);
    }
  }

  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const int64_t outer = bottom[0]->count(0, axis_), inner = bottom[0]->count(axis_ + 1);
    const int64_t bottom_row = bottom[0]->shape(axis_) * inner;
    int offset = 0;
    for (Blob* t : top) {
      const int64_t len = t->shape(axis_) * inner;
      CopyRowsGpu(ctx_, outer, len, t->diff(), len, bottom[0]->diff() + offset * inner, bottom_row);
      offset += t->shape(axis_);
    }
  }

 private:
  int axis_ = 1;
};

CORTADO_REGISTER_LAYER(Slice, SliceLayer);

}  // namespace cortado
