// tile.cpp — Tile (Caffe's TileLayer): tile_param.tiles copies of the bottom along tile_param.axis
// (default 1; negative counts from the end). With outer = Π dims before the axis and inner = Π dims
// from the axis on, top[o, t, j] = bottom[o, j] for t < tiles, so the top's axis dim is tiles times
// the bottom's. Backward sums the copies: dbottom[o, j] = Σ_t dtop[o, t, j].
// Both are ForEach functors over the output's elements (shape_ops_math.hpp, shared by both devices);
// the copies' gradients are added in float in increasing t.
#include "cortado/error.hpp"
#include "cortado/layer_registry.hpp"
#include "shape_ops_math.hpp"

namespace cortado {

class TileLayer : public EitherDevice<Layer> {
 public:
  using EitherDevice::EitherDevice;
  const char* type() const override { return "Tile"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }
  bool BackwardReadsBottomData(int) const override { return false; }
  bool BackwardReadsTopData(int) const override { return false; }

  void Reshape(const BlobVec& bottom, const BlobVec& top) override {
    const TileParameter& p = param_.tile_param();
    const int n = bottom[0]->num_axes();
    CORTADO_REQUIRE(p.has_tiles(), Describe(), ": tile_param.tiles must be given");
    CORTADO_REQUIRE(p.tiles() > 0, Describe(), ": tile_param.tiles must be positive, got ", p.tiles());
    CORTADO_REQUIRE(p.axis() >= -n && p.axis() < n, Describe(), ": tile_param.axis ", p.axis(),
                    " is out of range for bottom shape ", bottom[0]->shape_string());
    axis_ = p.axis() < 0 ? p.axis() + n : p.axis();
    tiles_ = p.tiles();
    std::vector<int> shape = bottom[0]->shape();
    shape[axis_] *= tiles_;
    top[0]->Reshape(shape);
  }

 protected:
  void Forward_any(const BlobVec& bottom, const BlobVec& top) override {
    const int64_t inner = bottom[0]->count(axis_);
    ForEach(ctx_, top[0]->count(), shape_ops::TileForward{inner, tiles_, bottom[0]->data(), top[0]->data()});
  }

  void Backward_any(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const int64_t inner = bottom[0]->count(axis_);
    ForEach(ctx_, bottom[0]->count(), shape_ops::TileBackward{inner, tiles_, top[0]->diff(), bottom[0]->diff()},
            tiles_);
  }

 private:
  int axis_ = 1;
  int tiles_ = 1;
};

CORTADO_REGISTER_LAYER(Tile, TileLayer);

}  // namespace cortado
