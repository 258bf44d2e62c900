// cast.cpp — Cast: the bottom's values in the top's storage types (forward_type, backward_type) and
// image layout (layout), and the top's gradient back in the bottom's. The Net inserts it wherever a
// mixed-precision or channels-last net changes a blob's type or layout (net_precision.cpp).
#include "cast_math.hpp"
#include "cortado/layer_registry.hpp"

namespace cortado {

class CastLayer : public EitherDevice<Layer> {
 public:
  using EitherDevice<Layer>::EitherDevice;
  const char* type() const override { return "Cast"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }
  bool BackwardReadsBottomData(int) const override { return false; }
  bool BackwardReadsTopData(int) const override { return false; }

  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    CORTADO_REQUIRE(top[0] != bottom[0], Describe(), ": cannot run in place; give the top its own name");
    top[0]->ReshapeLike(*bottom[0]);
  }

 protected:
  void Forward_any(const BlobVec& bottom, const BlobVec& top) override {
    cast::CastValues(ctx_, top[0]->count(), Between(*top[0], top[0]->data_type(), *bottom[0], bottom[0]->data_type()),
                     top[0]->raw_data(), bottom[0]->raw_data());
  }
  void Backward_any(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    cast::CastValues(ctx_, top[0]->count(), Between(*bottom[0], bottom[0]->diff_type(), *top[0], top[0]->diff_type()),
                     bottom[0]->raw_diff(), top[0]->raw_diff());
  }

 private:
  // From `in` (values of in_type) to `out` (out_type).
  static cast::Conversion Between(const Blob& out, DataType out_type, const Blob& in, DataType in_type) {
    cast::Conversion c{out_type, in_type};
    if (in.num_axes() == 4 && out.channels_last() != in.channels_last()) {
      c.channels = in.shape(1);
      c.spatial = static_cast<int64_t>(in.shape(2)) * in.shape(3);
      c.transpose = c.channels > 1 && c.spatial > 1;
      c.to_nhwc = out.channels_last();
    }
    return c;
  }
};

CORTADO_REGISTER_LAYER(Cast, CastLayer);

}  // namespace cortado
