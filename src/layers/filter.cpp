// filter.cpp — Filter: keeps the items a selector marks (Caffe's FilterLayer).
// Bottoms: K ≥ 1 blobs to filter, then the selector s, of shape (num) or (num, 1, 1, …); every bottom
// has num items along axis 0. Tops: K blobs. With S = the items i, in increasing order, where s_i ≠ 0
// (NaN counts as ≠ 0, as in Caffe):
//   top_t row k = bottom_t row S[k]   (top_t has |S| items, the rest of bottom_t's shape)
//   dbottom_t row i = dtop_t row k when i = S[k], else 0;  the selector gets no gradient (a request
//   for it is an error, as in Caffe).
// The tops' first axis changes from batch to batch, so Forward reshapes them, as Caffe does in
// Reshape; at setup they hold all num items (Caffe's first reshape), which is their capacity. No item
// selected gives empty tops, as in Caffe (whose backward would then divide by zero; here it writes
// zeros). Not in place.
// GPU: the selector is read back to the host (the tops' shape depends on it: the forward pass waits
// for it), the row maps go back to the device in one copy, and filter_gpu.hpp (cuda/filter.cu)
// gathers and scatters rows.
#include <algorithm>
#include <vector>

#include "cortado/error.hpp"
#include "cortado/layer_registry.hpp"
#include "filter_gpu.hpp"

namespace cortado {

class FilterLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Filter"; }
  int MinBottomBlobs() const override { return 2; }
  int MinTopBlobs() const override { return 1; }
  bool AllowForceBackward(int bottom_index) const override { return bottom_index != selector_index_; }
  bool IsCapturable() const override { return false; }  // its top shapes depend on the selector, read back each forward
  bool ReshapesTopsInForward() const override { return true; }
  bool BackwardReadsBottomData(int) const override { return false; }  // the row maps only
  bool BackwardReadsTopData(int) const override { return false; }

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override {
    CORTADO_REQUIRE(top.size() == bottom.size() - 1, Describe(), ": needs one top per filtered bottom (",
                    bottom.size() - 1, " bottoms before the selector), but has ", top.size(), " tops");
    for (Blob* t : top)
      for (Blob* b : bottom) CORTADO_REQUIRE(t != b, Describe(), ": cannot run in place");
    selector_index_ = static_cast<int>(bottom.size()) - 1;
    if (ctx_.device() == Device::kGPU) maps_ = AddStepScratch();
  }

  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    const Blob& s = *bottom[selector_index_];
    CORTADO_REQUIRE(s.num_axes() >= 1, Describe(), ": the selector (last bottom) must have at least one axis");
    for (int i = 1; i < s.num_axes(); ++i)
      CORTADO_REQUIRE(s.shape(i) == 1, Describe(), ": the selector (last bottom) must be (num) or (num, 1, ...); got ",
                      s.shape_string());
    num_ = s.shape(0);
    for (int i = 0; i < selector_index_; ++i) {
      CORTADO_REQUIRE(bottom[i]->num_axes() >= 1 && bottom[i]->shape(0) == num_, Describe(), ": bottom ", i, " (",
                      bottom[i]->shape_string(), ") must have the selector's ", num_, " items along axis 0");
      top[i]->ReshapeLike(*bottom[i]);
    }
    maps_host_.assign(2 * static_cast<size_t>(num_), -1);
    selector_host_.assign(static_cast<size_t>(num_), 0.0f);
    if (maps_) maps_->Reshape(std::vector<int>{2 * num_});
  }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    Select(bottom[selector_index_]->data(), bottom, top);
    for (int t = 0; t < selector_index_; ++t) {
      const int64_t dim = bottom[t]->count(1);
      const float* x = bottom[t]->data();
      float* y = top[t]->data();
      for (int64_t k = 0; k < selected_; ++k)
        std::copy(x + maps_host_[k] * dim, x + (maps_host_[k] + 1) * dim, y + k * dim);
    }
  }

  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    RefuseSelectorGradient(propagate_down);
    for (int t = 0; t < selector_index_; ++t) {
      if (!propagate_down[t]) continue;
      const int64_t dim = bottom[t]->count(1);
      const float* dy = top[t]->diff();
      float* dx = bottom[t]->diff();
      for (int64_t i = 0; i < num_; ++i) {
        const int k = maps_host_[num_ + i];
        if (k >= 0) {
          std::copy(dy + k * dim, dy + (k + 1) * dim, dx + i * dim);
        } else {
          std::fill(dx + i * dim, dx + (i + 1) * dim, 0.0f);
        }
      }
    }
  }

  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    if (num_ > 0) FilterReadSelectorGpu(ctx_, num_, bottom[selector_index_]->data(), selector_host_.data());
    Select(selector_host_.data(), bottom, top);
    if (num_ == 0) return;
    FilterUploadMapsGpu(ctx_, maps_host_, Maps());
    for (int t = 0; t < selector_index_; ++t)
      FilterForwardGpu(ctx_, selected_, bottom[t]->count(1), Maps(), bottom[t]->data(), top[t]->data());
  }

  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    RefuseSelectorGradient(propagate_down);
    for (int t = 0; t < selector_index_; ++t)
      if (propagate_down[t])
        FilterBackwardGpu(ctx_, num_, bottom[t]->count(1), Maps(), top[t]->diff(), bottom[t]->diff());
  }

 private:
  // Fills maps_host_ from the selector (host values) and gives the tops |S| items.
  void Select(const float* selector, const BlobVec& bottom, const BlobVec& top) {
    selected_ = 0;
    for (int i = 0; i < num_; ++i) {
      maps_host_[num_ + i] = -1;
      if (selector[i] != 0.0f) {  // NaN too, as Caffe's `if (value)`
        maps_host_[selected_] = i;
        maps_host_[num_ + i] = selected_++;
      }
    }
    for (int t = 0; t < selector_index_; ++t) {
      std::vector<int> shape = bottom[t]->shape();
      shape[0] = selected_;
      top[t]->Reshape(shape);
    }
  }

  void RefuseSelectorGradient(const std::vector<bool>& propagate_down) const {
    CORTADO_REQUIRE(static_cast<int>(propagate_down.size()) <= selector_index_ || !propagate_down[selector_index_],
                    Describe(), ": cannot backpropagate to the selector (last bottom); set propagate_down: false ",
                    "on it");
  }

  int* Maps() { return reinterpret_cast<int*>(maps_->data()); }

  int selector_index_ = 1;
  int num_ = 0, selected_ = 0;
  // maps_host_[k < selected_]: the bottom item of top item k; maps_host_[num_ + i]: the top item of
  // bottom item i, or −1.
  std::vector<int> maps_host_;
  std::vector<float> selector_host_;  // GPU nets: the selector read back
  Blob* maps_ = nullptr;              // GPU nets: maps_host_ on the device (2·num ints)
};

CORTADO_REGISTER_LAYER(Filter, FilterLayer);

}  // namespace cortado
