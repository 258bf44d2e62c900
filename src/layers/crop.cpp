// crop.cpp — Crop (Caffe's CropLayer): bottom 0 cropped to the size of bottom 1 on every axis from
// crop_param.axis (default 2) on; earlier axes keep bottom 0's dims. crop_param.offset gives where the
// crop starts: none (0 on every cropped axis), one (for every cropped axis) or one per cropped axis.
// Forward: top[c] = bottom0[c + offset] for every top coordinate c. Backward: bottom 0's diff is the
// top diff at c + offset and 0 elsewhere; bottom 1 only lends its shape (no gradient; its diff, if
// asked for, is 0). A crop that does not fit inside bottom 0 is an Error naming both shapes.
// The copy is an index-mapped ForEach over the top's elements (shape_ops_math.hpp, shared by both
// devices); Backward zeroes bottom 0's diff first.
#include "cortado/error.hpp"
#include "cortado/kernels/arithmetic.hpp"  // Constant
#include "cortado/layer_registry.hpp"
#include "shape_ops_math.hpp"

namespace cortado {

class CropLayer : public EitherDevice<Layer> {
 public:
  using EitherDevice::EitherDevice;
  const char* type() const override { return "Crop"; }
  int ExactNumBottomBlobs() const override { return 2; }
  int ExactNumTopBlobs() const override { return 1; }
  bool AllowForceBackward(int bottom_index) const override { return bottom_index == 0; }
  bool BackwardReadsBottomData(int) const override { return false; }  // bottom 1 lends only its shape
  bool BackwardReadsTopData(int) const override { return false; }

  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    const CropParameter& p = param_.crop_param();
    const Blob& data = *bottom[0];
    const Blob& ref = *bottom[1];
    const int n = data.num_axes();
    CORTADO_REQUIRE(ref.num_axes() == n, Describe(), ": bottoms must have the same number of axes, got ",
                    data.shape_string(), " and ", ref.shape_string());
    CORTADO_REQUIRE(p.axis() >= -n && p.axis() < n, Describe(), ": crop_param.axis ", p.axis(),
                    " is out of range for bottom shape ", data.shape_string());
    const int start = p.axis() < 0 ? p.axis() + n : p.axis();
    CORTADO_REQUIRE(p.offset_size() <= 1 || p.offset_size() == n - start, Describe(), ": ", p.offset_size(),
                    " offsets given but ", n - start, " axes are cropped (give one offset, or one per axis from ",
                    start, ")");
    std::vector<int> shape = data.shape();
    offsets_.assign(n, 0);
    for (int i = start; i < n; ++i) {
      const int64_t offset = p.offset_size() == 0 ? 0 : p.offset(p.offset_size() == 1 ? 0 : i - start);
      CORTADO_REQUIRE(offset + ref.shape(i) <= data.shape(i), Describe(), ": cannot crop bottom shape ",
                      data.shape_string(), " to reference shape ", ref.shape_string(), " at offset ", offset,
                      " on axis ", i);
      offsets_[i] = static_cast<int>(offset);
      shape[i] = ref.shape(i);
    }
    top[0]->Reshape(shape);
  }

 protected:
  void Forward_any(const BlobVec& bottom, const BlobVec& top) override {
    Copy(*bottom[0], *top[0], bottom[0]->data(), top[0]->data(), false);
  }

  void Backward_any(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override {
    if (propagate_down.size() > 1 && propagate_down[1] && bottom[1]->has_diff())
      Map(ctx_, bottom[1]->count(), arithmetic::Constant{0.0f}, bottom[1]->diff());
    if (!propagate_down[0]) return;
    Map(ctx_, bottom[0]->count(), arithmetic::Constant{0.0f}, bottom[0]->diff());
    Copy(*bottom[0], *top[0], top[0]->diff(), bottom[0]->diff(), true);
  }

 private:
  // Forward (backward false): cropped[c] = full[c + offset]; backward: full[c + offset] = cropped[c].
  // src/dst are the full and cropped arrays' values (on the context's device).
  void Copy(const Blob& full, const Blob& cropped, const float* src, float* dst, bool backward) {
    ForEach(ctx_, cropped.count(),
            shape_ops::CropCopy{shape_ops::MakeCropGeometry(cropped.num_axes(), cropped.shape().data(),
                                                            full.shape().data(), offsets_.data()),
                                src, dst, backward});
  }

  std::vector<int> offsets_;
};

CORTADO_REGISTER_LAYER(Crop, CropLayer);

}  // namespace cortado
