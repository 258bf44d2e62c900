// batch_reindex.cpp — BatchReindex: picks items of a batch by index (Caffe's BatchReindexLayer).
// Bottoms: data x (num, …) and indices idx (1-D, count values in [0, num); non-integers are truncated,
// as in Caffe). Top: (count, the rest of x's shape).
//   y row k = x row int(idx_k);   dx row n = Σ_{k : int(idx_k) = n} dy row k  (an index may repeat; rows
//   never picked get 0). The indices get no gradient: a request for one is an error, as in Caffe.
// An index outside [0, num) (or NaN) is an error naming the layer.
// GPU: batch_reindex_gpu.hpp (cuda/batch_reindex.cu): a gather that marks a bad index in a device word read
// back at the end of Forward (as SoftmaxWithLoss checks labels), and a backward kernel in which each
// element of dx sums its picks in increasing k (deterministic, the CPU's order).
#include <algorithm>

#include "batch_reindex_gpu.hpp"
#include "cortado/error.hpp"
#include "cortado/layer_registry.hpp"

namespace cortado {

class BatchReindexLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "BatchReindex"; }
  int ExactNumBottomBlobs() const override { return 2; }
  int ExactNumTopBlobs() const override { return 1; }
  bool AllowForceBackward(int bottom_index) const override { return bottom_index != 1; }
  bool IsCapturable() const override { return false; }  // its GPU forward waits to check the indices
  bool BackwardReadsBottomData(int i) const override { return i == 1; }  // the indices
  bool BackwardReadsTopData(int) const override { return false; }

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override {
    CORTADO_REQUIRE(top[0] != bottom[0] && top[0] != bottom[1], Describe(), ": cannot run in place");
    if (ctx_.device() == Device::kGPU) flag_ = AddStepScratch();
  }

  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    CORTADO_REQUIRE(bottom[1]->num_axes() == 1, Describe(), ": the indices (bottom 1) must be 1-D, got ",
                    bottom[1]->shape_string());
    CORTADO_REQUIRE(bottom[0]->num_axes() >= 1, Describe(), ": the data (bottom 0) needs at least one axis");
    num_ = bottom[0]->shape(0);
    count_ = bottom[1]->shape(0);
    dim_ = bottom[0]->count(1);
    std::vector<int> shape = bottom[0]->shape();
    shape[0] = static_cast<int>(count_);
    top[0]->Reshape(shape);
    if (flag_) flag_->Reshape(std::vector<int>{1});
  }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const float* idx = bottom[1]->data();
    for (int64_t k = 0; k < count_; ++k)
      if (!(idx[k] >= 0 && idx[k] < static_cast<float>(num_))) FailBadIndex(idx[k], k);
    const float* x = bottom[0]->data();
    float* y = top[0]->data();
    for (int64_t k = 0; k < count_; ++k) {
      const int64_t n = static_cast<int64_t>(idx[k]);
      std::copy(x + n * dim_, x + (n + 1) * dim_, y + k * dim_);
    }
  }

  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    RefuseIndexGradient(propagate_down);
    if (!propagate_down[0]) return;
    const float* idx = bottom[1]->data();
    const float* dy = top[0]->diff();
    float* dx = bottom[0]->diff();
    std::fill(dx, dx + bottom[0]->count(), 0.0f);
    for (int64_t k = 0; k < count_; ++k) {
      float* row = dx + static_cast<int64_t>(idx[k]) * dim_;
      for (int64_t d = 0; d < dim_; ++d) row[d] += dy[k * dim_ + d];
    }
  }

  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    float bad = 0;
    const int64_t at = BatchReindexForwardGpu(ctx_, num_, count_, dim_, bottom[1]->data(), bottom[0]->data(),
                                              top[0]->data(), flag_->data(), &bad);
    if (at >= 0) FailBadIndex(bad, at);
  }

  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    RefuseIndexGradient(propagate_down);
    if (!propagate_down[0]) return;
    BatchReindexBackwardGpu(ctx_, num_, count_, dim_, bottom[1]->data(), top[0]->diff(), bottom[0]->diff());
  }

 private:
  [[noreturn]] void FailBadIndex(float value, int64_t position) const {
    Fail(Describe(), ": index ", value, " (at position ", position, ") is outside [0, ", num_,
         "), the items of bottom 0");
  }

  void RefuseIndexGradient(const std::vector<bool>& propagate_down) const {
    CORTADO_REQUIRE(propagate_down.size() < 2 || !propagate_down[1], Describe(),
                    ": cannot backpropagate to the indices (bottom 1); set propagate_down: false on it");
  }

  int64_t num_ = 0, count_ = 0, dim_ = 0;
  Blob* flag_ = nullptr;  // GPU nets: the bad-index flag
};

CORTADO_REGISTER_LAYER(BatchReindex, BatchReindexLayer);

}  // namespace cortado
