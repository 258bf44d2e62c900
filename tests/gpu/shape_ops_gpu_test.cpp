// shape_ops_gpu_test.cpp — Crop, Tile, Reduction and ArgMax on the GPU: ArgMax's tie order on
// hand-made values. The plain
// CPU-against-GPU comparisons (Crop's offsets, Tile's axes, Reduction's operations, ArgMax with and
// without an axis, out_max_val and top_k) are rows of layer_table_gpu_test.cpp.
#include "cortado/gpu.hpp"
#include "cortado/layer_registry.hpp"
#include "gpu_compare.hpp"

namespace cortado::test {

TEST(ShapeOpsGpu, ArgMaxTiesPickTheHigherIndexFirst) {
  SKIP_WITHOUT_GPU();
  LayerFixture f("type: 'ArgMax' argmax_param { top_k: 4 out_max_val: true }", {{1, 5}}, 1, 1701, Device::kGPU);
  f.bottom(0).WriteData({2, 7, 2, 7, 1});
  f.Forward();
  f.ctx().Synchronize();
  EXPECT_EQ(f.top(0).ReadData(), (std::vector<float>{3, 1, 2, 0, 7, 7, 2, 2}));
}

}  // namespace cortado::test
